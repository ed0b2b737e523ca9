"""The Firebase JS SDK, unmodified, against a Canopy cluster (issue 17 item 4; Cluster.md, *How a client reaches
its node*): three nats-server and three `canopy serve --cluster` nodes advertised as `s-c<i>.localhost:<port>`
(the SDK caches and falls back from `s-` hosts only; Chromium resolves `*.localhost` to loopback itself), the SDK
in headless Chromium on a page served from loopback.

The SDK is not part of Canopy: point CANOPY_FIREBASE_JS_BUNDLE at a browser bundle that sets
`globalThis.firebaseSDK = {app, database, Component}` (`build-bundle.sh` here builds one from a firebase-js-sdk
checkout). Without it every test here is skipped. Run it with the browser venv (Selenium); `-s` prints the SDK's
connection attempts during failover:

    CANOPY_FIREBASE_JS_BUNDLE=/path/bundle.js .build/browser-venv/bin/python -m pytest -q -s Tests/interop/jssdk

The SDK authenticates with tokens from `canopy token mint`, handed to it the way Firebase Auth hands it an ID
token (`client.js`); the nodes run without `--emulator`, with rules that need `auth` (RULES).
"""
import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

BUNDLE = os.environ.get("CANOPY_FIREBASE_JS_BUNDLE")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from test_cluster import NATS, Cluster  # noqa: E402  (Tests/interop)
from conftest import BIN  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not BUNDLE, reason="CANOPY_FIREBASE_JS_BUNDLE is not set: no Firebase JS SDK bundle to "
                                          "verify the cluster with (Tests/interop/jssdk/build-bundle.sh builds one)"),
    pytest.mark.skipif(NATS is None, reason="nats-server is not installed"),
]


def browser_conftest():
    """Tests/browser/conftest.py, for its headless Chromium (loaded by path: both directories have a conftest)."""
    path = os.path.join(HERE, "..", "..", "browser", "conftest.py")
    spec = importlib.util.spec_from_file_location("canopy_browser_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGE = b"""<!doctype html><meta charset="utf-8"><title>Canopy JS SDK check</title>
<script>localStorage.clear()</script><script src="/sdk.js"></script><script src="/client.js"></script>"""
RULES = {"rules": {
    "rooms": {".read": "auth != null", ".write": "auth != null"},
    "presence": {"$uid": {".read": "auth != null", ".write": "auth != null && auth.uid === $uid"}},
}}


class PageServer:
    """The page, the bundle and client.js on a loopback port (an http:// origin, so localStorage works)."""

    def __init__(self):
        if not os.path.isfile(BUNDLE):
            pytest.fail(f"CANOPY_FIREBASE_JS_BUNDLE={BUNDLE} is not a file", pytrace=False)
        files = {"/": (PAGE, "text/html"), "/client.js": (open(os.path.join(HERE, "client.js"), "rb").read(),
                                                           "text/javascript"),
                 "/sdk.js": (open(BUNDLE, "rb").read(), "text/javascript")}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body, kind = files.get(self.path.split("?")[0], (b"", "text/plain"))
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


class Page:
    """One Chromium tab on the page; `call` runs a `canopyJS` method and returns its (awaited) result."""

    def __init__(self, driver, url):
        self.driver = driver
        driver.get(url)
        until(lambda: driver.execute_script("return !!window.canopyJS"), "client.js did not load")

    def call(self, method, *args, timeout=20):
        self.driver.set_script_timeout(timeout)
        result = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "Promise.resolve().then(() => canopyJS[arguments[0]](...arguments[1]))"
            ".then(v => done({ok: v === undefined ? null : v}), e => done({error: String(e && e.message || e)}));",
            method, list(args))
        if "error" in result:
            raise JSError(result["error"])
        return result["ok"]

    def events(self, **match):
        every = self.driver.execute_script("return canopyJS.events")
        return [e for e in every if all(e.get(k) == v for k, v in match.items())]

    def logs(self):
        return self.driver.execute_script("return canopyJS.logs")


class JSError(Exception):
    pass


class PacedWriter:
    """Writes `<path>/w<n>` = n from client `name` with `setRecorded` (acknowledgements recorded as events), ten a
    second; `written` counts them."""

    def __init__(self, client, name, path):
        self.client, self.name, self.path = client, name, path
        self.written = 0

    def write(self, count):
        for _ in range(count):
            self.client.call("setRecorded", self.name, f"{self.path}/w{self.written:03d}", self.written)
            self.written += 1
            time.sleep(0.1)


def until(condition, message, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(message)


class JSCluster(Cluster):
    """A cluster whose nodes advertise `s-` hosts, run without `--emulator` (signed tokens only)."""

    def __init__(self, *extra, advertise="http://s-c{i}.localhost:{port}"):
        super().__init__(advertise=advertise, extra=extra, emulator=False)
        self.ports = [int(url.rsplit(":", 1)[1]) for url in self.urls]

    def rest(self, method, node, path, ns, body=None):
        req = urllib.request.Request(f"{self.urls[node]}/{path}.json?ns={ns}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
        req.add_header("Authorization", "Bearer " + self.admin)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def namespace(self, prefix):
        """A fresh namespace with RULES, and the index of its owner (read from a node's X-Canopy-Owner)."""
        ns = f"{prefix}-{uuid.uuid4().hex[:8]}"
        req = urllib.request.Request(f"{self.urls[0]}/.settings/rules.json?ns={ns}", method="PUT",
                                     data=json.dumps(RULES).encode())
        req.add_header("Authorization", "Bearer " + self.admin)
        with urllib.request.urlopen(req, timeout=30):
            pass
        return ns, self.owner(ns)

    def owner(self, ns, asking=0):
        status, headers, _ = self.rest("GET", asking, "", ns)
        assert status == 200, (status, ns)
        owner = headers.get("X-Canopy-Owner")
        return asking if owner is None else self.ports.index(int(owner.rsplit(":", 1)[1]))

    def mint(self, uid, ns):
        out = subprocess.run([BIN, "token", "mint", "--data", os.path.join(self.dir, "c0"), "--uid", uid,
                              "--ns", ns, "--ttl", "1h"], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def database_url(self, node, ns):
        return f"http://127.0.0.1:{self.ports[node]}?ns={ns}"

    def kill(self, node):
        self.nodes[node].kill()
        self.nodes[node].wait()


@pytest.fixture(scope="module")
def chromium():
    driver = browser_conftest().chromium_driver()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page_server():
    server = PageServer()
    yield server
    server.stop()


@pytest.fixture()
def page(chromium, page_server):
    return Page(chromium, page_server.url)


def cluster_fixture(name, *extra, **options):
    """A module-scoped fixture `name`: a JSCluster with the nodes' options `extra`, stopped after the module."""
    @pytest.fixture(scope="module", name=name)
    def fixture():
        c = JSCluster(*extra, **options)
        yield c
        c.stop()
    return fixture


cluster = cluster_fixture("cluster")
replicated = cluster_fixture("replicated", "--replicate")
by_load = cluster_fixture("by_load", "--replicate-above", "1")


def connected(page, name):
    until(lambda: (page.call("connected", name) or [None])[-1] is True, f"{name}: .info/connected never true")


def test_a_client_of_a_non_owner_follows_the_reset_to_the_owner(cluster, page):
    ns, owner = cluster.namespace("jssdk")
    other = (owner + 1) % 3
    page.call("open", "alice", cluster.database_url(other, ns), cluster.mint("alice", ns))
    connected(page, "alice")
    owner_host = f"s-c{owner}.localhost:{cluster.ports[owner]}"
    logs = page.logs()
    # The SDK asked the node it was given, was reset to the owner, opened a WebSocket there and stayed.
    assert any(f"ws://127.0.0.1:{cluster.ports[other]}/.ws?" in line for line in logs), logs
    assert any(f"Reset packet received.  New host: {owner_host}" in line for line in logs), logs
    assert any(f"ws://{owner_host}/.ws?" in line for line in logs), logs
    # ... and kept the owner for this configured host (localStorage, as the SDK does for `s-` hosts).
    storage = page.call("storage")
    assert json.loads(storage[f"firebase:host:127.0.0.1:{cluster.ports[other]}"]) == owner_host, storage

    page.call("listenValue", "alice", "rooms/r1")
    page.call("listenChildren", "alice", "rooms/r1/msgs")
    page.call("set", "alice", "rooms/r1", {"title": "Keynote"})
    page.call("update", "alice", "rooms/r1", {"topic": "Opening"})
    key = page.call("push", "alice", "rooms/r1/msgs", {"text": "hello"})
    until(lambda: page.events(kind="child_added", key=key), "no child_added for the push")
    values = [e["value"] for e in page.events(kind="value", path="rooms/r1")]
    assert values[0] is None and {"title": "Keynote"} in values, values
    assert values[-1] == {"title": "Keynote", "topic": "Opening", "msgs": {key: {"text": "hello"}}}, values

    assert page.call("increment", "alice", "rooms/r1/count") == {"committed": True, "value": 1}
    assert page.call("increment", "alice", "rooms/r1/count") == {"committed": True, "value": 2}
    for node in range(3):  # every node answers the same (the non-owners proxy REST to the owner)
        status, _, value = cluster.rest("GET", node, "rooms/r1", ns)
        assert status == 200 and value == {"title": "Keynote", "topic": "Opening", "count": 2,
                                           "msgs": {key: {"text": "hello"}}}, (node, value)

    # onDisconnect, registered through the owner, runs when the client's connection goes.
    page.call("open", "bob", cluster.database_url(other, ns), cluster.mint("bob", ns))
    page.call("set", "bob", "presence/bob", "online")
    page.call("onDisconnectSet", "bob", "presence/bob", "offline")
    page.call("listenValue", "alice", "presence/bob")
    until(lambda: page.events(kind="value", path="presence/bob", value="online"), "alice never saw bob online")
    page.call("goOffline", "bob")
    until(lambda: page.events(kind="value", path="presence/bob", value="offline"), "bob's onDisconnect did not run")
    assert cluster.rest("GET", other, "presence/bob", ns)[2] == "offline"

    # The rules are the owner's, judged on the token the SDK sent: bob may not write alice's presence.
    with pytest.raises(JSError, match="(?i)permission"):
        page.call("set", "alice", "presence/bob", "forged")
    page.call("open", "anonymous", cluster.database_url(other, ns), None)
    with pytest.raises(JSError, match="(?i)permission"):
        page.call("get", "anonymous", "rooms/r1")
    for name in ("alice", "bob", "anonymous"):
        page.call("close", name)

    # A client opened later on the same databaseURL (a page reload) starts at the cached owner.
    seen = len(page.logs())
    page.call("open", "carol", cluster.database_url(other, ns), cluster.mint("carol", ns))
    connected(page, "carol")
    opened = [line for line in page.logs()[seen:] if "connecting to" in line]
    assert opened and f"ws://{owner_host}/.ws?" in opened[0], opened
    assert page.call("get", "carol", "rooms/r1/count") == 2
    page.call("close", "carol")


def test_clients_of_all_three_nodes_with_replicas(replicated, page):
    ns, owner = replicated.namespace("jssdk-replica")
    names = [f"n{i}" for i in range(3)]
    for i, name in enumerate(names):
        page.call("open", name, replicated.database_url(i, ns), replicated.mint(name, ns))
    for name in names:
        connected(page, name)
        page.call("listenValue", name, "rooms/r2")
    # Replicas serve their sessions themselves: nobody was reset.
    assert not [line for line in page.logs() if "Reset packet" in line], page.logs()
    for name in names:
        until(lambda: page.events(client=name, kind="value", path="rooms/r2"), f"{name}: no first value")
    writers = [names[(owner + 1) % 3], names[(owner + 2) % 3], names[owner]]
    for round_, writer in enumerate(writers):
        page.call("setRecorded", writer, f"rooms/r2/{writer}", round_)
        until(lambda: page.events(client=writer, kind="ack", path=f"rooms/r2/{writer}"), f"{writer}: no ack")
        mine = page.events(client=writer)
        ack = next(i for i, e in enumerate(mine) if e["kind"] == "ack" and e["path"] == f"rooms/r2/{writer}")
        # The writer's listener saw the write before its acknowledgement, on a replica as on the owner.
        assert any(e["kind"] == "value" and (e["value"] or {}).get(writer) == round_ for e in mine[:ack]), mine
    final = {writer: i for i, writer in enumerate(writers)}
    for name in names:
        until(lambda: (page.events(client=name, kind="value", path="rooms/r2") or [{}])[-1].get("value") == final,
              f"{name}: did not reach {final}")
        assert page.call("get", name, "rooms/r2") == final
    assert page.call("increment", writers[0], "rooms/count") == {"committed": True, "value": 1}
    assert page.call("increment", writers[1], "rooms/count") == {"committed": True, "value": 2}
    for name in names:
        page.call("close", name)


def test_forced_long_polling_through_a_non_owner(cluster, page):
    """`forceLongPolling()`: the SDK never opens a WebSocket. The non-owner it was given proxies its long-poll
    session to the owner instead of resetting it, and sets, listeners, a transaction and onDisconnect work."""
    page.call("forceLongPolling")
    ns, owner = cluster.namespace("jssdk-lp")
    other = (owner + 1) % 3
    page.call("open", "lp", cluster.database_url(other, ns), cluster.mint("lp", ns))
    connected(page, "lp")
    page.call("listenValue", "lp", "rooms/lp")
    page.call("set", "lp", "rooms/lp", {"title": "Polled"})
    key = page.call("push", "lp", "rooms/lp/msgs", {"text": "hi"})
    until(lambda: (page.events(kind="value", path="rooms/lp") or [{}])[-1].get("value")
          == {"title": "Polled", "msgs": {key: {"text": "hi"}}}, "the listener did not see the writes")
    assert page.call("increment", "lp", "rooms/lp/count") == {"committed": True, "value": 1}
    page.call("open", "watcher", cluster.database_url(owner, ns), cluster.mint("watcher", ns))
    page.call("set", "lp", "presence/lp", "online")
    page.call("onDisconnectSet", "lp", "presence/lp", "offline")
    page.call("goOffline", "lp")
    until(lambda: cluster.rest("GET", owner, "presence/lp", ns)[2] == "offline", "lp's onDisconnect did not run")
    logs = page.logs()
    assert any(f"Connecting via long-poll to http://127.0.0.1:{cluster.ports[other]}/.lp?" in line
               for line in logs), logs
    assert not [line for line in logs if "Websocket connecting" in line], logs
    assert not [line for line in logs if "Reset packet" in line], logs
    status, _, value = cluster.rest("GET", owner, "rooms/lp", ns)
    assert status == 200 and value == {"title": "Polled", "count": 1, "msgs": {key: {"text": "hi"}}}, value
    for name in ("lp", "watcher"):
        page.call("close", name)


def test_replicas_by_load_and_a_dead_replicas_on_disconnect(by_load, page):
    """`--replicate-above 1`: with one client at the owner a client of another node is reset to the owner; with
    two, the next one is served by the node it reached, from a replica. When that node is killed, the owner
    performs the onDisconnect its client registered there."""
    ns, owner = by_load.namespace("jssdk-load")
    other = (owner + 1) % 3
    page.call("open", "first", by_load.database_url(owner, ns), by_load.mint("first", ns))
    connected(page, "first")
    time.sleep(3)  # a load report, a lease renewal and a poll
    page.call("open", "quiet", by_load.database_url(other, ns), by_load.mint("quiet", ns))
    connected(page, "quiet")
    assert [line for line in page.logs() if "Reset packet" in line], "a quiet namespace's client was not reset"
    page.call("close", "quiet")
    page.call("open", "second", by_load.database_url(owner, ns), by_load.mint("second", ns))
    connected(page, "second")
    page.call("listenValue", "first", "presence/guest")

    def served_at_other():
        seen = len(page.logs())
        name = f"guest{served_at_other.tries}"
        served_at_other.tries += 1
        page.call("clearStorage")  # or the SDK would start at the owner it was reset to before
        page.call("open", name, by_load.database_url(other, ns), by_load.mint("guest", ns))
        connected(page, name)
        if [line for line in page.logs()[seen:] if "Reset packet" in line]:
            page.call("close", name)
            time.sleep(0.5)
            return None
        return name
    served_at_other.tries = 0
    guest = until(served_at_other, "a busy namespace's client was still reset to the owner", timeout=30)
    page.call("set", guest, "presence/guest", "online")
    page.call("onDisconnectSet", guest, "presence/guest", "offline")
    until(lambda: page.events(client="first", kind="value", path="presence/guest", value="online"),
          "the owner's client never saw the guest online")
    by_load.kill(other)
    until(lambda: page.events(client="first", kind="value", path="presence/guest", value="offline"),
          "the owner did not perform the dead replica's onDisconnect", timeout=40)
    for name in ("first", "second", guest):
        page.call("close", name)


@pytest.mark.parametrize("which", ["cluster", "replicated"])
def test_a_client_survives_kill_9_of_the_owner(which, page, request):
    """Last in the module: it kills a node of each cluster. Without `--replicate` the client is reset to the owner
    and, once it is killed, finds the new one through its configured node; with it, the client stays on the
    replica it was given."""
    cluster = request.getfixturevalue(which)
    ns, owner = cluster.namespace("jssdk-failover")
    other = (owner + 1) % 3
    page.call("open", "writer", cluster.database_url(other, ns), cluster.mint("writer", ns))
    connected(page, "writer")
    page.call("listenChildren", "writer", "rooms/r3")
    writer = PacedWriter(page, "writer", "rooms/r3")
    write = writer.write
    write(10)
    until(lambda: len(page.events(kind="ack")) == 10, "the first writes were not acknowledged")
    started = time.time()
    cluster.kill(owner)
    write(40)  # 4 s of writes while the namespace has no owner: queued by the SDK, resent on reconnect
    until(lambda: len(page.events(kind="ack")) + len(page.events(kind="nack")) >= writer.written,
          "writes made across the failover were not acknowledged", timeout=60)
    recovered = time.time() - started
    assert not page.events(kind="nack"), [(e["path"], e["value"]) for e in page.events(kind="nack")]
    new_owner = cluster.owner(ns, asking=other)
    assert new_owner != owner
    expected = {f"w{i:03d}": i for i in range(writer.written)}
    for node in (n for n in range(3) if n != owner):
        assert cluster.rest("GET", node, "rooms/r3", ns)[2] == expected, node
    added = [e["key"] for e in page.events(kind="child_added")]
    assert sorted(added) == sorted(expected) and len(added) == len(set(added)), added  # each exactly once
    assert not page.events(kind="child_removed")
    assert (page.call("connected", "writer") or [None])[-1] is True
    # How the SDK got there, as its log tells (printed with -s): the dead host, then the configured one, ...
    attempts = [line for line in page.logs() if re.search(r"connecting to|Connecting via long-poll|Reset packet",
                                                          line)]
    for line in attempts:
        print("SDK:", line[:160])
    print(f"{which}: owner c{owner} killed, client configured with c{other}, new owner c{new_owner}; "
          f"every write acknowledged {recovered:.1f} s after the kill")
    assert f":{cluster.ports[owner]}/" not in attempts[-1], attempts
    page.call("close", "writer")
