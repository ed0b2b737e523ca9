"""Interop fixtures: start the real `canopy serve` binary on a loopback port and point real clients at it."""
import os
import re
import shutil
import subprocess
import tempfile
import uuid

import pytest

BIN = os.environ.get("CANOPY_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", ".build", "debug", "canopy")


class Server:
    def __init__(self, *extra, data=None):
        self.data = data or tempfile.mkdtemp(prefix="canopy-interop-")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--port", "0", "--data", self.data, "--emulator", "--log-level", "warning", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
        with open(os.path.join(self.data, "admin.credential")) as f:
            self.admin = f.read().strip()

    def stop(self, keep_data=False):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if not keep_data:
            shutil.rmtree(self.data, ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture()
def app(server):
    """A firebase_admin app in emulator mode on a fresh namespace."""
    import firebase_admin
    ns = "interop-" + uuid.uuid4().hex[:10]
    app = firebase_admin.initialize_app(
        options={"databaseURL": f"{server.url}?ns={ns}", "projectId": "canopy-interop"}, name=ns)
    app.canopy_ns = ns
    yield app
    firebase_admin.delete_app(app)


@pytest.fixture()
def fresh_server():
    """A daemon of its own (for clients that cannot name a namespace: each test gets an empty default one)."""
    s = Server()
    yield s
    s.stop()


def database_secret(server):
    """The database secret, as `canopy token secret --data <dir>` prints it."""
    out = subprocess.run([BIN, "token", "secret", "--data", server.data], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def mint(server, *args):
    """A token minted by `canopy token mint` against the server's data directory."""
    out = subprocess.run([BIN, "token", "mint", "--data", server.data, *args], check=True, capture_output=True,
                         text=True)
    return out.stdout.strip()


def rest(server, method, path, body=None):
    """A REST request as the emulator's admin (`Bearer owner`); the answer's text."""
    import json
    import urllib.request
    request = urllib.request.Request(f"{server.url}{path}", method=method, headers={"Authorization": "Bearer owner"},
                                     data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.read().decode()


def restarted_with_large_namespace(ns):
    """A daemon restarted on a data directory whose namespace `ns` holds 20,000 objects of 12 fields of 40 x's
    (`/items/k00000` to `/items/k19999`): 240,000 rows, whose load (1.7 s for the debug build, 2026-12-04) is long
    enough to listen during it."""
    first = Server()
    for chunk in range(20):
        objects = {f"k{chunk * 1000 + i:05d}": {f"f{j}": "x" * 40 for j in range(12)} for i in range(1000)}
        rest(first, "PATCH", f"/items.json?ns={ns}&print=silent", objects)
    first.stop(keep_data=True)
    return Server(data=first.data)


def early_reads(server):
    """`canopy_early_reads_total`: reads, listens and streams answered from the file while a namespace loaded."""
    metrics = rest(server, "GET", "/.canopy/metrics")
    return int(next(line for line in metrics.splitlines() if line.startswith("canopy_early_reads_total ")).split()[1])

