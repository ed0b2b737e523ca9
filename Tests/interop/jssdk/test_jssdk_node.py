"""The Firebase JS SDK under Node against a Canopy cluster (issue 17 item 4): the bundle test_jssdk_cluster.py
loads in Chromium, run by `node --experimental-websocket` (Node 20's WebSocket; no `localStorage`, no long
polling) through `node_client.js`, with the same `client.js` calls.

Node resolves `s-c<i>.localhost` through the system resolver, which does not know it, so these nodes advertise IP
literals (`127.0.0.1:<port>`). With those the SDK never goes back to its configured host after a redirected host
dies (Cluster.md, *What the JS SDK does with a reset*), so failover is checked with replicas, where the client
stays on the node it was given. Skipped without a bundle (CANOPY_FIREBASE_JS_BUNDLE) or without a Node that has
`--experimental-websocket`.
"""
import json
import shutil
import subprocess
import threading
import time

import pytest

from test_jssdk_cluster import BUNDLE, HERE, JSError, PacedWriter, cluster_fixture, connected, until  # noqa: E402  (same directory)

NODE = shutil.which("node")


def node_has_websocket():
    if not NODE:
        return False
    probe = subprocess.run([NODE, "--experimental-websocket", "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)"],
                           capture_output=True)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.skipif(not BUNDLE, reason="CANOPY_FIREBASE_JS_BUNDLE is not set: no Firebase JS SDK bundle"),
    pytest.mark.skipif(not node_has_websocket(), reason="no node with --experimental-websocket (Node 20.10 or later)"),
]


class NodeClient:
    """node_client.js as a child process; `call`, `events` and `logs` as test_jssdk_cluster.Page has them."""

    def __init__(self):
        self.process = subprocess.Popen([NODE, "--experimental-websocket", f"{HERE}/node_client.js", BUNDLE],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.answers = {}
        self.next_id = 0
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            message = json.loads(line)
            with self.lock:
                self.answers[message["id"]] = message
                self.lock.notify_all()

    def call(self, method, *args, timeout=20):
        with self.lock:
            self.next_id += 1
            id_ = self.next_id
        self.process.stdin.write(json.dumps({"id": id_, "method": method, "args": list(args)}) + "\n")
        with self.lock:
            if not self.lock.wait_for(lambda: id_ in self.answers, timeout=timeout):
                raise AssertionError(f"node did not answer {method} in {timeout} s")
            answer = self.answers.pop(id_)
        if "error" in answer:
            raise JSError(answer["error"])
        return answer["ok"]

    def events(self, **match):
        return [e for e in self.call("events") if all(e.get(k) == v for k, v in match.items())]

    def logs(self):
        return self.call("logs")

    def stop(self):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture()
def node():
    client = NodeClient()
    yield client
    client.stop()


plain = cluster_fixture("plain", advertise="http://127.0.0.1:{port}")
replicated_plain = cluster_fixture("replicated_plain", "--replicate", advertise="http://127.0.0.1:{port}")


def test_under_node_a_client_of_a_non_owner_follows_the_reset(plain, node):
    ns, owner = plain.namespace("node")
    other = (owner + 1) % 3
    node.call("open", "alice", plain.database_url(other, ns), plain.mint("alice", ns))
    connected(node, "alice")
    logs = node.logs()
    assert any(f"Reset packet received.  New host: 127.0.0.1:{plain.ports[owner]}" in line for line in logs), logs
    assert any(f"Websocket connecting to ws://127.0.0.1:{plain.ports[owner]}/.ws?" in line for line in logs), logs
    node.call("listenValue", "alice", "rooms/n1")
    node.call("set", "alice", "rooms/n1", {"title": "Keynote"})
    node.call("update", "alice", "rooms/n1", {"topic": "Opening"})
    key = node.call("push", "alice", "rooms/n1/msgs", {"text": "hello"})
    final = {"title": "Keynote", "topic": "Opening", "msgs": {key: {"text": "hello"}}}
    until(lambda: (node.events(kind="value", path="rooms/n1") or [{}])[-1].get("value") == final,
          "the listener did not reach the last write")
    assert node.call("increment", "alice", "rooms/n1/count") == {"committed": True, "value": 1}
    assert plain.rest("GET", other, "rooms/n1", ns)[2] == {**final, "count": 1}
    node.call("open", "bob", plain.database_url(other, ns), plain.mint("bob", ns))
    node.call("set", "bob", "presence/bob", "online")
    node.call("onDisconnectSet", "bob", "presence/bob", "offline")
    node.call("goOffline", "bob")
    until(lambda: plain.rest("GET", owner, "presence/bob", ns)[2] == "offline", "bob's onDisconnect did not run")
    with pytest.raises(JSError, match="(?i)permission"):
        node.call("set", "alice", "presence/bob", "forged")
    for name in ("alice", "bob"):
        node.call("close", name)


def test_under_node_replica_clients_and_kill_9_of_the_owner(replicated_plain, node):
    cluster = replicated_plain
    ns, owner = cluster.namespace("node-replica")
    replica = (owner + 1) % 3
    node.call("open", "writer", cluster.database_url(replica, ns), cluster.mint("writer", ns))
    connected(node, "writer")
    assert not [line for line in node.logs() if "Reset packet" in line], "a replica's client was reset"
    node.call("listenChildren", "writer", "rooms/n2")
    node.call("listenValue", "writer", "rooms/n2")
    node.call("setRecorded", "writer", "rooms/n2/first", 0)
    until(lambda: node.events(kind="ack", path="rooms/n2/first"), "the first write was not acknowledged")
    mine = node.events()
    ack = next(i for i, e in enumerate(mine) if e["kind"] == "ack")
    # At a replica too, the writer's listener sees its write before the acknowledgement.
    assert any(e["kind"] == "value" and (e["value"] or {}).get("first") == 0 for e in mine[:ack]), mine
    writer = PacedWriter(node, "writer", "rooms/n2")
    write = writer.write
    write(10)
    cluster.kill(owner)
    write(30)
    until(lambda: len(node.events(kind="ack")) + len(node.events(kind="nack")) >= writer.written + 1,
          "writes made across the failover were not acknowledged", timeout=60)
    assert not node.events(kind="nack"), node.events(kind="nack")
    expected = {"first": 0, **{f"w{i:03d}": i for i in range(writer.written)}}
    survivor = next(n for n in range(3) if n != owner)
    until(lambda: cluster.rest("GET", survivor, "rooms/n2", ns)[2] == expected, "the new owner lacks writes")
    added = [e["key"] for e in node.events(kind="child_added")]
    assert sorted(added) == sorted(expected) and len(added) == len(set(added)), added  # each exactly once
    node.call("close", "writer")


def test_under_node_a_listen_after_a_restart_starts_from_the_file_while_the_namespace_loads(node):
    """The SDK's WebSocket opens while a restarted daemon loads the namespace; its listen gets the stored value
    from the file, then the write that waited for the load, each once (Architecture.md, "Reads while a namespace
    loads")."""
    from conftest import early_reads, rest, restarted_with_large_namespace

    server = restarted_with_large_namespace("big")
    try:
        node.call("open", "ann", f"{server.url}?ns=big", server.admin)
        node.call("listenValue", "ann", "items/k05000/f3")
        until(lambda: node.events(kind="value", path="items/k05000/f3"), "the listen got no value")
        rest(server, "PUT", "/items/k05000/f3.json?ns=big", "changed")
        until(lambda: node.events(kind="value", path="items/k05000/f3")[-1]["value"] == "changed",
              "the listen did not get the write")
        assert [e["value"] for e in node.events(kind="value", path="items/k05000/f3")] == ["x" * 40, "changed"]
        assert early_reads(server) >= 1, "the WebSocket waited for the load instead"
        node.call("close", "ann")
    finally:
        server.stop()

