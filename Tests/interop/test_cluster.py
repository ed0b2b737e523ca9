"""firebase-admin (Python) against a Canopy cluster: three nats-server processes with JetStream and three
`canopy serve --cluster` nodes. The client is pointed at every node in turn, whichever owns the namespace: a node
that does not own it proxies the request (and the event stream) to the one that does, so the unmodified SDK works
against any node (with `--cluster-rest redirect` it would not: requests drops Authorization on a redirect to
another port)."""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from conftest import BIN

NATS = shutil.which("nats-server") or ("/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server") else None)
pytestmark = pytest.mark.skipif(NATS is None, reason="nats-server is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Three nats-server and three `canopy serve --cluster` nodes `c0`..`c2`. `advertise` is each node's
    `--advertise` URL, formatted with `{i}` (the node's index) and `{port}`; `extra` is added to every node's
    command line (`--replicate`); `emulator=False` runs them without `--emulator`, so only signed tokens count."""

    def __init__(self, advertise="http://127.0.0.1:{port}", extra=(), emulator=True):
        self.dir = tempfile.mkdtemp(prefix="canopy-cluster-")
        self.procs = []
        self.nodes = []
        client, route = [free_port() for _ in range(3)], [free_port() for _ in range(3)]
        routes = ", ".join(f'"nats://127.0.0.1:{p}"' for p in route)
        for i in range(3):
            conf = os.path.join(self.dir, f"n{i}.conf")
            with open(conf, "w") as f:
                f.write(f'server_name: n{i}\nlisten: 127.0.0.1:{client[i]}\nmax_payload: 8MB\n'
                        f'jetstream {{ store_dir: "{self.dir}/js{i}" }}\n'
                        f'cluster {{ name: interop, listen: 127.0.0.1:{route[i]}, routes: [{routes}] }}\n')
            self.procs.append(subprocess.Popen([NATS, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for port in client:
            wait_for_port(port)
        nats = ",".join(f"nats://127.0.0.1:{p}" for p in client)
        self.urls = []
        for i in range(3):
            port = free_port()
            data = os.path.join(self.dir, f"c{i}")
            os.makedirs(data)
            if i > 0:
                for name in ("signing.key", "admin.credential"):
                    shutil.copy(os.path.join(self.dir, "c0", name), os.path.join(data, name))
            proc = subprocess.Popen(
                [BIN, "serve", "--port", str(port), "--data", data, "--log-level", "warning",
                 *(["--emulator"] if emulator else []), *extra,
                 "--cluster", nats, "--node", f"c{i}", "--advertise", advertise.format(i=i, port=port)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.procs.append(proc)
            self.nodes.append(proc)
            for _ in range(50):
                line = proc.stdout.readline()
                if not line or re.search(r"serving http://", line):
                    break
            self.urls.append(f"http://127.0.0.1:{port}")
        with open(os.path.join(self.dir, "c0", "admin.credential")) as f:
            self.admin = f.read().strip()

    def stop(self):
        for proc in reversed(self.procs):
            proc.kill()
            proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for_port(port):
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.stop()


def app_on(url, ns):
    import firebase_admin
    name = f"{ns}-{uuid.uuid4().hex[:6]}"
    return firebase_admin.initialize_app(
        options={"databaseURL": f"{url}?ns={ns}", "projectId": "canopy-interop"}, name=name)


@pytest.fixture(scope="module")
def named_cluster():
    """Nodes advertised by name, as the JS SDK needs for failover (Cluster.md): the proxy resolves them."""
    c = Cluster(advertise="http://s-c{i}.localhost:{port}")
    yield c
    c.stop()


@pytest.mark.parametrize("which", ["cluster", "named_cluster"])
def test_every_node_serves_every_namespace_to_firebase_admin(which, request):
    import firebase_admin
    from firebase_admin import db
    cluster = request.getfixturevalue(which)
    ns = "cluster-" + uuid.uuid4().hex[:8]
    apps = [app_on(url, ns) for url in cluster.urls]
    try:
        db.reference("talks/t1", app=apps[0]).set({"title": "Keynote", "room": 1})
        for app in apps:
            assert db.reference("talks/t1", app=app).get() == {"title": "Keynote", "room": 1}
        db.reference("talks/t1", app=apps[1]).update({"room": 2})
        key = db.reference("talks", app=apps[2]).push({"title": "Workshop"}).key
        for app in apps:
            talks = db.reference("talks", app=app).get()
            assert talks["t1"] == {"title": "Keynote", "room": 2} and talks[key] == {"title": "Workshop"}
        count = db.reference("count", app=apps[1]).transaction(lambda n: (n or 0) + 1)
        assert count == 1 and db.reference("count", app=apps[2]).get() == 1
    finally:
        for app in apps:
            firebase_admin.delete_app(app)


def test_a_listener_on_any_node_hears_writes_made_on_another(cluster):
    import firebase_admin
    from firebase_admin import db
    ns = "cluster-listen-" + uuid.uuid4().hex[:8]
    apps = [app_on(url, ns) for url in cluster.urls]
    events, got = [], threading.Event()
    try:
        db.reference("feed", app=apps[0]).set({"a": 1})

        def on_event(event):
            events.append((event.event_type, event.path, event.data))
            if event.data == 2:
                got.set()

        registrations = [db.reference("feed", app=app).listen(on_event) for app in apps]
        time.sleep(1)
        db.reference("feed/b", app=apps[2]).set(2)
        deadline = time.time() + 15
        while time.time() < deadline and sum(1 for e in events if e[2] == 2) < 3:
            time.sleep(0.05)
        # close() waits for the stream's reader thread, which wakes on the stream's next bytes: close them all at
        # once, then write once more so every stream has something to read.
        closers = [threading.Thread(target=r.close) for r in registrations]
        for closer in closers:
            closer.start()
        time.sleep(0.2)
        db.reference("feed/c", app=apps[0]).set(3)
        for closer in closers:
            closer.join(timeout=40)
        # Each of the three listeners got the first value, then the write made through the third node.
        assert sum(1 for e in events if e == ("put", "/", {"a": 1})) == 3, events
        assert sum(1 for e in events if e == ("put", "/b", 2)) == 3, events
    finally:
        for app in apps:
            firebase_admin.delete_app(app)
