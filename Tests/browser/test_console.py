"""The organiser's console in a real browser (headless Chromium) against the real daemon with the demo event.

Each test saves screenshots under .build/browser-screenshots/ and ends by checking the browser console has no
error (network failures a test provokes on purpose, such as a 412 conflict, are named and allowed)."""
import json
import os
import queue
import re
import socket
import subprocess
import threading
import time
import urllib.request

import pytest
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import BIN, DIRECTORY, NS

VIP_TIER = "101"           # VIP: Ada 100201, Dario 100204 (and others in the seed directory)
VIP_ATTENDEE = "100201"    # Ada Quillfeather, tier 101
OTHER_ATTENDEE = "100202"  # Bram Ostrander, tier default


def vip_ids():
    with open(DIRECTORY) as f:
        return sorted(a["id"] for a in json.load(f)["attendees"] if str(a.get("tierId")) == VIP_TIER)


class SSE:
    """A raw Server-Sent Events client on a thread: every `put`/`patch` data line lands in `events`."""

    def __init__(self, url):
        self.events = queue.Queue()
        self.response = urllib.request.urlopen(
            urllib.request.Request(url, headers={"Accept": "text/event-stream"}), timeout=30)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        kind = None
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind in ("put", "patch"):
                    self.events.put((kind, json.loads(line[6:])))
        except Exception:
            pass

    def next(self, timeout):
        return self.events.get(timeout=timeout)

    def close(self):
        # Shut the socket down first: a plain close would wait for the reading thread's next line (a keep-alive).
        try:
            self.response.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass


def upload_directory(b):
    b.tab("directory")
    b.find("#directory-file").send_keys(DIRECTORY)
    b.click("#directory-form button[type=submit]")
    b.until(lambda: "Stored" in b.text_of("#directory-status"), "directory not stored")
    b.until(lambda: "attendees" in b.text_of("#directory-view"))


def create_item(b, title, kind="text", text="Hello", tier_label=None, url=None):
    b.tab("content")
    b.driver.find_element(By.CSS_SELECTOR, "#new-type option[value='%s']" % kind).click()
    b.click("#new-item")
    b.visible("#editor")
    b.type("#ed-title", title)
    if text is not None and kind in ("text", "html"):
        b.type("#ed-text", text)
    if url:
        b.type("#ed-url", url)
    if tier_label:
        label = b.driver.find_element(By.XPATH, "//fieldset[legend='Tiers']//label[contains(., '%s')]" % tier_label)
        label.find_element(By.TAG_NAME, "input").click()
    b.click("#ed-save")
    b.until(lambda: not b.driver.find_element(By.ID, "editor").is_displayed(), "the editor did not close")
    b.until(lambda: b.card(title) is not None, "the new card did not appear")
    return b.card_key(title)


def confirm_dialog(b):
    b.visible("#dialog")
    return b.find("#dialog-body")


def test_served_by_the_daemon_with_a_strict_policy(daemon):
    with urllib.request.urlopen(daemon.url + "/.canopy/console/") as r:
        html = r.read().decode()
        csp = r.headers["Content-Security-Policy"]
        etag = r.headers["ETag"]
        assert r.headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline script in the page"
    assert not re.search(r"\son[a-z]+=", html), "inline event handler in the page"
    for src in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert not src.startswith(("http:", "https:", "//")), "external resource " + src
    req = urllib.request.Request(daemon.url + "/.canopy/console/", headers={"If-None-Match": etag})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 304
    with urllib.request.urlopen(daemon.url + "/.canopy/console/app.js") as r:
        assert r.headers["Content-Type"].startswith("text/javascript")
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(daemon.url + "/.canopy/console/nope.js")
    assert e.value.code == 404


def test_attendee_token_gets_nothing(daemon, browser_factory):
    b = browser_factory("attendee")
    b.type("#credential", daemon.mint_attendee(OTHER_ATTENDEE))
    b.click("#signin-form button[type=submit]")
    b.until(lambda: b.text_of("#signin-error") != "", "no error for an attendee token")
    assert "may not administer any event" in b.text_of("#signin-error")
    assert not b.driver.find_element(By.ID, "console").is_displayed()
    b.screenshot("01-attendee-refused")
    assert b.console_errors(allowed=[r"namespaces.* 40[13]"]) == []


def test_organiser_token_signs_in_without_the_rules(daemon, browser_factory):
    token = subprocess.run(
        [BIN, "token", "mint", "--data", daemon.data, "--admin", "--ns", NS, "--ttl", "1h"],
        check=True, capture_output=True, text=True).stdout.strip()
    b = browser_factory("organiser-token").sign_in(token)
    assert b.text_of("#event-name") == NS
    b.tab("rules")
    b.until(lambda: "Only the daemon's admin credential" in b.text_of("#rules-status"))
    assert not b.find("#rules-save").is_enabled()
    b.screenshot("01b-organiser-token")
    assert b.console_errors() == []


def test_publish_tier_item_with_dry_run_and_live_feeds(daemon, browser_factory):
    a = browser_factory("a").sign_in()
    b = browser_factory("b").sign_in()
    upload_directory(a)
    a.screenshot("02-directory")
    key = create_item(a, "VIP breakfast moved to 8:15", text="Lounge level 3.", tier_label="VIP")
    # The second console sees the new draft live.
    b.until(lambda: b.card("VIP breakfast moved to 8:15") is not None, "second console did not see the new item")
    assert "draft" in b.card_text("VIP breakfast moved to 8:15")
    a.screenshot("03-content-with-new-draft")

    vip_token = daemon.mint_attendee(VIP_ATTENDEE)
    other_token = daemon.mint_attendee(OTHER_ATTENDEE)
    vip = SSE(f"{daemon.url}/private/adminable/tiers/{VIP_TIER}/content.json?ns={NS}&auth={vip_token}")
    other = SSE(f"{daemon.url}/private/adminable/tiers/default/content.json?ns={NS}&auth={other_token}")
    other_user = SSE(f"{daemon.url}/private/adminable/users/{OTHER_ATTENDEE}/content.json?ns={NS}&auth={other_token}")
    for stream in (vip, other, other_user):
        stream.next(5)  # the first `put` of the current value

    a.click("#publish-all-top")
    body = confirm_dialog(a)
    a.until(lambda: a.driver.find_elements(By.CSS_SELECTOR, "#dialog-body li[data-attendee]"), "no attendee list")
    gainers = {li.get_attribute("data-attendee"): li.text
               for li in a.driver.find_elements(By.CSS_SELECTOR, "#dialog-body li[data-attendee]")}
    for vip_id in vip_ids():
        assert vip_id in gainers and "VIP breakfast moved to 8:15" in gainers[vip_id], gainers
    assert "gains 'VIP breakfast moved to 8:15'" not in gainers.get(OTHER_ATTENDEE, "")
    assert f"/private/adminable/tiers/{VIP_TIER}/content" in body.text
    a.screenshot("04-publish-dry-run")
    a.click("#dialog-ok")

    kind, event = vip.next(10)
    while key not in json.dumps(event):
        kind, event = vip.next(10)
    assert event["data"] is not None
    a.until(lambda: "live" in a.card_text("VIP breakfast moved to 8:15"), "the card did not turn Live")
    b.until(lambda: "live" in b.card_text("VIP breakfast moved to 8:15"), "second console did not see the publish")
    # The default-tier attendee's streams got nothing with the item.
    for stream in (other, other_user):
        try:
            while True:
                _, event = stream.next(0.5)
                assert key not in json.dumps(event)
        except queue.Empty:
            pass
    for stream in (vip, other, other_user):
        stream.close()
    a.screenshot("05-published")
    b.screenshot("06-second-console-live")

    # An edit in one console shows in the other within a second or so.
    a.card_action("VIP breakfast moved to 8:15", "edit")
    a.visible("#editor")
    a.type("#ed-title", "VIP breakfast moved to 8:30")
    a.click("#ed-save")
    started = time.monotonic()
    b.until(lambda: b.card("VIP breakfast moved to 8:30") is not None, "second console did not see the edit")
    assert time.monotonic() - started < 5
    assert "changed" in b.card_text("VIP breakfast moved to 8:30")
    b.screenshot("07-second-console-sees-edit")
    assert a.console_errors() == [] and b.console_errors() == []


def test_concurrent_edit_is_a_conflict(daemon, browser_factory):
    a = browser_factory("conflict-a").sign_in()
    b = browser_factory("conflict-b").sign_in()
    title = "Welcome to Canopy Demo Summit"
    a.card_action(title, "edit")
    a.visible("#editor")
    b.card_action(title, "edit")
    b.visible("#editor")
    b.type("#ed-title", "Welcome (edited by B)")
    b.click("#ed-save")
    b.until(lambda: b.card("Welcome (edited by B)") is not None)
    a.type("#ed-title", "Welcome (edited by A)")
    a.click("#ed-save")
    box = a.visible("#ed-conflict")
    a.until(lambda: "Conflict" in box.text)
    assert "Welcome (edited by A)" in a.text_of("#ed-conflict pre.mine")
    assert "Welcome (edited by B)" in a.text_of("#ed-conflict pre.theirs")
    a.screenshot("08-conflict")
    # Nothing was overwritten.
    status, value = daemon.json("GET", f"/private/admin/pendingContent.json?ns={NS}")
    assert any(v.get("title") == "Welcome (edited by B)" for v in value.values())
    assert not any(v.get("title") == "Welcome (edited by A)" for v in value.values())
    # Choosing "mine" saves over theirs knowingly.
    a.click("#conflict-mine")
    a.until(lambda: a.card("Welcome (edited by A)") is not None)
    assert a.console_errors(allowed=[r"pendingContent/.* 412"]) == []
    assert b.console_errors() == []


def test_rollback_to_an_earlier_publish(daemon, browser_factory):
    a = browser_factory("rollback").sign_in()
    status, _ = daemon.json("POST", f"/.canopy/publish?ns={NS}")
    assert status == 200
    status, published = daemon.json("GET", f"/private/admin/content.json?ns={NS}")
    others = [item["title"] for item in (published or {}).values() if isinstance(item, dict) and item.get("title")]
    assert others, "the earlier publish should have items with titles"
    key = create_item(a, "Temporary notice", text="Gone after the rollback.")
    a.click("#publish-all-top")
    confirm_dialog(a)
    a.click("#dialog-ok")
    a.until(lambda: "live" in a.card_text("Temporary notice"))
    a.tab("publish")
    a.until(lambda: len(a.driver.find_elements(By.CSS_SELECTOR, "#history li[data-history]")) >= 2)
    # The list may be drawn again (the history refreshed after the publish) between finding and clicking.
    def click_earlier_entry():
        try:
            entries = a.driver.find_elements(By.CSS_SELECTOR, "#history li[data-history]")
            entries[1].find_element(By.TAG_NAME, "button").click()
            return True
        except StaleElementReferenceException:
            return False
    a.until(click_earlier_entry, "the earlier publish's rollback button could not be clicked")
    body = confirm_dialog(a)
    a.until(lambda: "Temporary notice" in body.text, "the rollback's dry-run does not show the item going")
    # Only that item: the earlier publish's snapshot holds every other one.
    assert not [title for title in others if title in body.text], body.text
    a.screenshot("09-rollback-dry-run")
    a.click("#dialog-ok")
    a.until(lambda: daemon.json("GET", f"/private/admin/content/{key}.json?ns={NS}")[1] is None, "not rolled back")
    a.tab("content")
    # A rollback republishes the snapshot and makes it the drafts as well: the card is gone.
    a.until(lambda: a.card("Temporary notice") is None, "the card should be gone with the rollback")
    a.screenshot("10-after-rollback")
    assert a.console_errors() == []


def test_xss_title_renders_as_text(daemon, browser_factory):
    a = browser_factory("xss").sign_in()
    evil = "<img src=x onerror=alert(1)>"
    create_item(a, evil, text="<b>not bold</b>")
    assert a.card(evil) is not None
    assert a.driver.find_elements(By.CSS_SELECTOR, "#cards img") == []
    with pytest.raises(NoAlertPresentException):
        a.driver.switch_to.alert.text
    a.tab("preview")
    a.driver.find_element(By.CSS_SELECTOR, "input[name=preview-version][value=pending]").click()
    a.until(lambda: evil in a.text_of("#preview-feed"), "the pending preview does not show the item")
    assert a.driver.find_elements(By.CSS_SELECTOR, "#preview-feed img") == []
    assert "<b>not bold</b>" in a.text_of("#preview-feed")
    a.screenshot("11-xss-preview")
    assert a.console_errors() == []


def test_keyboard_reorder_search_and_phone_width(daemon, browser_factory):
    a = browser_factory("phone", width=390, height=844).sign_in()
    keys = "return [...document.querySelectorAll('#cards li.card')].map(c => c.dataset.key)"
    key = a.driver.execute_script(keys)[0]
    a.driver.execute_script("document.querySelector('#cards li.card').focus()")
    a.driver.switch_to.active_element.send_keys(Keys.ALT, Keys.ARROW_DOWN)
    a.until(lambda: a.driver.execute_script(keys)[1] == key, "Alt+Down did not move the card")
    status, order = daemon.json("GET", f"/private/admin/pendingContent/{key}/order.json?ns={NS}")
    assert order == 1
    # The moved card keeps the focus, so it can be moved again from the keyboard.
    a.until(lambda: a.driver.execute_script("return document.activeElement.dataset.key") == key)
    a.driver.switch_to.active_element.send_keys(Keys.ALT, Keys.ARROW_UP)
    a.until(lambda: a.driver.execute_script(keys)[0] == key, "Alt+Up did not move the card back")
    a.screenshot("12-phone-width")
    a.type("#search", "keynote")
    a.until(lambda: len(a.driver.find_elements(By.CSS_SELECTOR, "#cards li.card")) == 1)
    assert a.driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert a.console_errors() == []


def test_data_tab_browses_edits_and_confirms_deletes(daemon, browser_factory):
    daemon.json("PUT", f"/scratch.json?ns={NS}", {"a": {"b": 1, "c": 2}, "leaf": "x"})
    a = browser_factory("data").sign_in()
    a.tab("data")
    a.type("#data-path", "/scratch")
    a.click("#data-form button[type=submit]")
    a.until(lambda: "Live: /scratch" in a.text_of("#data-status"))
    field = a.visible("input[aria-label='Value of /scratch/leaf']")
    field.clear()
    field.send_keys('"y"', Keys.ENTER)
    a.until(lambda: daemon.json("GET", f"/scratch/leaf.json?ns={NS}")[1] == "y")
    # Another writer's change shows live.
    daemon.json("PUT", f"/scratch/live.json?ns={NS}", 42)
    a.visible("input[aria-label='Value of /scratch/live']")
    a.click("button[aria-label='Delete /scratch/a']")
    body = confirm_dialog(a)
    assert "everything below it" in body.text
    a.screenshot("13-data-delete-confirmation")
    a.click("#dialog-ok")
    a.until(lambda: daemon.json("GET", f"/scratch/a.json?ns={NS}")[1] is None)
    assert a.console_errors() == []


def test_rules_tab_shows_syntax_error_at_its_line(daemon, browser_factory):
    a = browser_factory("rules").sign_in()
    a.tab("rules")
    a.until(lambda: a.find("#rules-text").get_attribute("value").strip().startswith(("{", "/")))
    text = '{\n  "rules": {\n    ".read": true,,\n    ".write": false\n  }\n}\n'
    area = a.find("#rules-text")
    a.driver.execute_script("arguments[0].value = arguments[1]", area, text)
    a.click("#rules-save")
    confirm_dialog(a)
    a.click("#dialog-ok")
    a.until(lambda: a.text_of("#rules-error") != "", "no error shown")
    assert re.search(r"Line 3\b", a.text_of("#rules-error")), a.text_of("#rules-error")
    a.screenshot("14-rules-error")
    status, _, raw = daemon.request("GET", f"/.settings/rules.json?ns={NS}")
    assert b",," not in raw
    assert a.console_errors(allowed=[r"rules\.json.* 400"]) == []


def test_completeness_inline_and_csv_import(daemon, browser_factory, tmp_path):
    a = browser_factory("csv").sign_in()
    # A web item without its URL: the editor says so as one types, the card says so, publishing is refused.
    a.driver.find_element(By.CSS_SELECTOR, "#new-type option[value='web']").click()
    a.click("#new-item")
    a.visible("#editor")
    a.type("#ed-title", "Floor plan")
    a.until(lambda: "needs a URL" in a.text_of("#ed-missing"))
    a.click("#ed-save")
    a.until(lambda: "incomplete: needs a url" in a.card_text("Floor plan"), "the card does not say what is missing")
    a.click("#publish-all-top")
    body = confirm_dialog(a)
    a.until(lambda: "Incomplete items" in body.text and "Floor plan" in body.text)
    assert not a.find("#dialog-ok").is_enabled()
    a.screenshot("15-incomplete-before-publish")
    a.click("#dialog-cancel")
    a.card_action("Floor plan", "delete")
    confirm_dialog(a)
    a.click("#dialog-ok")
    a.until(lambda: a.card("Floor plan") is None)

    csv = tmp_path / "mentors.csv"
    csv.write_text("email,description\n"
                   "ada.quillfeather@example.com,Your mentor is Bram.\n"
                   "nobody@example.com,Not an attendee.\n"
                   "Cleo.Marchbank@example.com,Your mentor is Esme.\n")
    a.click("#import-csv")
    a.visible("#csv-dialog")
    a.type("#csv-item-title", "Mentor match (day 2)")
    a.find("#csv-file").send_keys(str(csv))
    a.click("#csv-import")
    a.until(lambda: "Imported 2 of 3 rows" in a.text_of("#csv-result"), "no import summary")
    assert "nobody@example.com" in a.text_of("#csv-result") and "not in the directory" in a.text_of("#csv-result")
    a.screenshot("16-csv-import")
    a.click("#csv-cancel")
    a.until(lambda: "personal rows: 2 attendees" in a.card_text("Mentor match (day 2)"))
    assert a.console_errors() == []
