"""Browser-test fixtures: the real `canopy serve --demo` on a loopback port, headless Chromium through
chromedriver (Debian's `chromium` and `chromium-driver`), attendee tokens from `canopy token mint`."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("CANOPY_BIN") or os.path.join(ROOT, ".build", "debug", "canopy")
SHOTS = os.path.join(ROOT, ".build", "browser-screenshots")
NS = "canopy-demo-summit"
DIRECTORY = os.path.join(ROOT, "seed", "attendees.json")


class Daemon:
    """`canopy serve --demo` on a fresh data directory and an ephemeral port."""

    def __init__(self):
        self.data = tempfile.mkdtemp(prefix="canopy-browser-")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--demo", "--port", "0", "--data", self.data, "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        self.url = None
        for _ in range(50):
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"serving (https?://[0-9.]+:[0-9]+)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            self.proc.kill()
            raise RuntimeError("canopy serve did not start")
        # Keep reading its output so the pipe never fills.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        with open(os.path.join(self.data, "admin.credential")) as f:
            self.admin = f.read().strip()
        self.wait_for_demo()

    def request(self, method, path, body=None, headers=None, token=None):
        req = urllib.request.Request(self.url + path, method=method, data=body)
        req.add_header("Authorization", "Bearer " + (token or self.admin))
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def json(self, method, path, body=None, **kw):
        status, _, raw = self.request(method, path, None if body is None else json.dumps(body).encode(), **kw)
        return status, (json.loads(raw) if raw else None)

    def wait_for_demo(self):
        for _ in range(100):
            status, value = self.json("GET", f"/private/admin/pendingContent.json?ns={NS}&shallow=true")
            if status == 200 and value:
                return
            time.sleep(0.05)
        raise RuntimeError("the demo event was not loaded")

    def mint_attendee(self, attendee):
        out = subprocess.run(
            [BIN, "token", "mint", "--data", self.data, "--attendee", attendee, "--directory", DIRECTORY,
             "--ns", NS, "--ttl", "1h"], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    d.stop()


def chromium_driver(width=1200, height=900):
    options = webdriver.ChromeOptions()
    if width < 600:  # a phone: headless windows are never narrower than 500 px, so emulate the device
        options.add_experimental_option(
            "mobileEmulation", {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0}})
        width, height = 600, height
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(10)
    return driver


class Browser:
    """One browser window on the console, with helpers to drive it and to check its console log."""

    def __init__(self, daemon, name, width=1200, height=900):
        self.daemon = daemon
        self.name = name
        self.driver = chromium_driver(width, height)
        self.wait = WebDriverWait(self.driver, 10, poll_frequency=0.1)
        self.log = []

    def open(self):
        self.driver.get(self.daemon.url + "/.canopy/console/")
        return self

    def sign_in(self, credential=None):
        self.type("#credential", credential or self.daemon.admin)
        self.click("#signin-form button[type=submit]")
        self.wait.until(EC.visibility_of_element_located((By.ID, "cards")))
        self.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cards li.card"))
        return self

    def find(self, css):
        return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))

    def visible(self, css):
        return self.wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))

    def click(self, css):
        self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, css))).click()

    def type(self, css, text, clear=True):
        field = self.visible(css)
        if clear:
            field.clear()
        field.send_keys(text)
        return field

    def text_of(self, css):
        return self.find(css).text

    def until(self, condition, message=""):
        return self.wait.until(lambda d: condition(), message)

    FIND_CARD = """
        for (const card of document.querySelectorAll('#cards li.card'))
            if (card.querySelector('.card-title').textContent === arguments[0]) return card;
        return null;"""

    def card(self, title):
        """The card whose title is exactly `title` (None when absent), found in one round trip."""
        return self.driver.execute_script(self.FIND_CARD, title)

    def card_text(self, title):
        """The card's text content, lower-cased ("" when absent)."""
        return self.driver.execute_script(
            "const c = (function(){" + self.FIND_CARD + "}).apply(null, arguments);"
            " return c ? c.textContent.toLowerCase() : '';", title)

    def card_key(self, title):
        return self.driver.execute_script(
            "const c = (function(){" + self.FIND_CARD + "}).apply(null, arguments);"
            " return c ? c.dataset.key : null;", title)

    def card_action(self, title, action):
        """Clicks the card's button `data-action=action` (cards are redrawn live: retried when stale)."""
        self.until(lambda: self.card(title) is not None, f"no card '{title}'")
        for _ in range(20):
            try:
                self.card(title).find_element(By.CSS_SELECTOR, f"[data-action={action}]").click()
                return
            except StaleElementReferenceException:
                time.sleep(0.05)
        raise AssertionError("the card kept changing")

    def tab(self, name):
        self.click(f"#tab-{name}")
        self.visible(f"#panel-{name}")

    def screenshot(self, label):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, f"{label}.png")
        self.driver.save_screenshot(path)
        return path

    def console_errors(self, allowed=()):
        """The browser console's errors, except network failures whose text matches one of `allowed`."""
        self.log += self.driver.get_log("browser")
        errors = []
        for entry in self.log:
            if entry["level"] != "SEVERE":
                continue
            if entry.get("source") == "network" and any(re.search(p, entry["message"]) for p in allowed):
                continue
            errors.append(entry["message"])
        return errors

    def quit(self):
        self.driver.quit()


@pytest.fixture()
def browser_factory_opened():
    return []


@pytest.fixture()
def browser_factory(daemon, browser_factory_opened):
    opened = browser_factory_opened

    def make(name, **kw):
        b = Browser(daemon, name, **kw)
        opened.append(b)
        return b.open()

    yield make
    for b in opened:
        b.quit()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test leaves a screenshot of every browser it opened (`FAILED-<test>-<browser>.png`)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for b in item.funcargs.get("browser_factory_opened", []) or []:
            try:
                b.screenshot(f"FAILED-{item.name}-{b.name}")
            except Exception:
                pass
