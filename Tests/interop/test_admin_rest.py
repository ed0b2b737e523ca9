"""firebase-admin (Python) against the real canopy serve: the operations of its own integration suite."""
import threading

import pytest
from firebase_admin import db
from firebase_admin import exceptions

from dinosaurs import DINOS


def ref(app, path="/"):
    return db.reference(path, app=app)


@pytest.fixture()
def dinodb(app):
    r = ref(app, "_adminsdk/python/dinodb")
    r.set(DINOS)
    return r


def test_get_set_roundtrip(app):
    r = ref(app, "a/b")
    assert r.get() is None
    r.set({"name": "Ada", "n": 42, "pi": 3.5, "ok": True, "list": ["x", "y"]})
    assert r.get() == {"name": "Ada", "n": 42, "pi": 3.5, "ok": True, "list": ["x", "y"]}
    assert isinstance(r.child("n").get(), int)
    assert ref(app, "a").get() == {"b": r.get()}


def test_push_update_delete(app):
    users = ref(app, "users")
    empty = users.push()
    assert empty.get() == ""
    first = users.push({"name": "a", "since": 1})
    second = users.push({"name": "b", "since": 2})
    assert first.key < second.key and len(first.key) == 20
    users.update({f"{first.key}/since": 1840, f"{second.key}/since": 1946})
    assert first.child("since").get() == 1840 and second.child("since").get() == 1946
    first.update({"name": None})
    assert first.get() == {"since": 1840}
    second.delete()
    assert second.get() is None
    assert set(users.get().keys()) == {empty.key, first.key}


def test_shallow(dinodb):
    assert dinodb.get(shallow=True) == {"dinosaurs": True, "scores": True}


def test_etag_and_conditional_set(app):
    r = ref(app, "cond")
    r.set({"v": 1})
    value, etag = r.get(etag=True)
    assert value == {"v": 1} and isinstance(etag, str) and etag
    ok, current, current_tag = r.set_if_unchanged("invalid-etag", {"v": 2})
    assert ok is False and current == {"v": 1} and current_tag == etag
    ok, new_value, new_tag = r.set_if_unchanged(etag, {"v": 2})
    assert ok is True and new_value == {"v": 2} and new_tag != etag
    changed, value, tag = r.get_if_changed("wrong_etag")
    assert changed is True and value == {"v": 2}
    assert r.get_if_changed(tag) == (False, None, None)


def test_transaction_scalar_and_object(app):
    counter = ref(app, "counter")
    counter.set(42)
    assert counter.transaction(lambda v: (v or 0) + 1) == 43
    obj = ref(app, "obj")
    obj.set({"n": 1})
    assert obj.transaction(lambda v: {"n": v["n"] + 1}) == {"n": 2}


def test_concurrent_transactions_end_at_exact_count(app):
    counter = ref(app, "contended")
    counter.set(0)
    workers, each = 6, 10
    # firebase-admin gives a transaction up after 25 conflicts (TransactionAbortedError), and optimistic
    # concurrency promises no fairness: one of six contending threads lost 25 times in a row in 6 of 180 runs
    # (2026-12-07, this build and the one before it alike). An app runs an aborted transaction again; what must
    # hold is that every increment that succeeded is counted exactly once.
    aborted = []
    failures = []

    def work():
        for _ in range(each):
            for _attempt in range(20):
                try:
                    counter.transaction(lambda v: (v or 0) + 1)
                    break
                except db.TransactionAbortedError:
                    aborted.append(1)
            else:
                failures.append("an increment was aborted 20 times")

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert counter.get() == workers * each, f"{len(aborted)} transactions were aborted and run again"


def test_order_by_child_limits_and_ranges(dinodb):
    dinos = dinodb.child("dinosaurs")
    # firebase-admin's Query builders mutate the query, so build a fresh one per call.
    def by_height():
        return dinos.order_by_child("height")

    assert list(by_height().get().keys()) == [
        "linhenykus", "pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]
    assert list(by_height().limit_to_first(2).get().keys()) == ["linhenykus", "pterodactyl"]
    assert list(by_height().limit_to_last(2).get().keys()) == ["stegosaurus", "bruhathkayosaurus"]
    assert len(by_height().limit_to_first(10).get()) == 6
    assert list(by_height().start_at(3.5).get().keys()) == ["stegosaurus", "bruhathkayosaurus"]
    assert list(by_height().end_at(3.5).get().keys()) == [
        "linhenykus", "pterodactyl", "lambeosaurus", "triceratops"]
    assert list(by_height().start_at(2.5).end_at(5).get().keys()) == ["triceratops", "stegosaurus"]
    assert list(by_height().equal_to(0.6).get().keys()) == ["linhenykus", "pterodactyl"]
    assert list(dinos.order_by_child("ratings/pos").limit_to_first(2).get().keys()) == [
        "bruhathkayosaurus", "lambeosaurus"]


def test_order_by_key_and_value(dinodb):
    dinos = dinodb.child("dinosaurs")
    assert list(dinos.order_by_key().limit_to_first(2).get().keys()) == ["bruhathkayosaurus", "lambeosaurus"]
    scores = dinodb.child("scores")
    assert list(scores.order_by_value().limit_to_last(2).get().items()) == [("linhenykus", 80), ("pterodactyl", 93)]
    assert list(scores.order_by_value().start_at(22).end_at(80).get().keys()) == [
        "triceratops", "bruhathkayosaurus", "linhenykus"]


def test_bad_key_is_rejected_and_changes_nothing(app):
    r = ref(app, "safe")
    r.set({"k": 1})
    with pytest.raises(exceptions.InvalidArgumentError):
        r.update({"ok": 2, "bad.key/x": 3})
    assert r.get() == {"k": 1}


def test_listen_streams_initial_value_then_changes(app):
    import queue
    events = queue.Queue()
    users = ref(app, "listened/users")
    users.set({"a": {"name": "Ada"}})
    registration = ref(app, "listened").listen(lambda event: events.put(event))
    try:
        first = events.get(timeout=10)
        assert first.event_type == "put" and first.path == "/" and first.data == {"users": {"a": {"name": "Ada"}}}
        pushed = users.push("")
        second = events.get(timeout=10)
        assert second.event_type == "put" and second.path == f"/users/{pushed.key}" and second.data == ""
        users.child("a").update({"name": "Ada L."})
        third = events.get(timeout=10)
        # An update streams as one patch at its path, with the updated children (as Firebase sends it).
        assert third.event_type == "patch" and third.path == "/users/a" and third.data == {"name": "Ada L."}
    finally:
        # close() returns once the listener thread wakes up; a write wakes it now instead of the 30 s keep-alive.
        import threading
        threading.Timer(0.3, lambda: users.child("wake").set(True)).start()
        registration.close()


def test_listen_ends_where_get_does_after_random_writes(app):
    """Differential check of the SSE stream: applying every put/patch event as firebase-admin reports it (put replaces
    the value at its path, patch merges children) must rebuild exactly what a final get() returns."""
    import json
    import queue
    import random

    rnd = random.Random(2026)
    keys = ["a", "b", "c", "0", "1", "10", "-1", "x y"]

    def value(depth=0):
        roll = rnd.random()
        if depth > 2 or roll < 0.45:
            return rnd.choice([True, False, 0, 1, -3, 2.5, "s", "", 7, None])
        if roll < 0.55:
            return [value(depth + 1), value(depth + 1)]
        return {rnd.choice(keys): value(depth + 1) for _ in range(rnd.randrange(4))}

    def normalized(v):
        if isinstance(v, list):
            v = {str(i): x for i, x in enumerate(v)}
        if isinstance(v, dict):
            v = {k: normalized(x) for k, x in v.items()}
            v = {k: x for k, x in v.items() if x is not None}
            return v or None
        return v

    def setting(tree, segments, v):
        if not segments:
            return normalized(v)
        tree = dict(tree) if isinstance(tree, dict) else {}
        child = setting(tree.get(segments[0]), segments[1:], v)
        if child is None:
            tree.pop(segments[0], None)
        else:
            tree[segments[0]] = child
        return tree or None

    events = queue.Queue()
    root = ref(app, "agree")
    registration = root.listen(lambda event: events.put(event))
    try:
        for _ in range(250):
            path = "/".join(rnd.choice(keys) for _ in range(1 + rnd.randrange(3)))
            roll = rnd.random()
            if roll < 0.5:
                v = value()
                if v is None:
                    root.child(path).delete()
                else:
                    root.child(path).set(v)
            elif roll < 0.8:
                root.child(path).update({rnd.choice(keys): value(1) for _ in range(1 + rnd.randrange(3))})
            else:
                root.child(path).delete()
        root.parent.child("agree-end").set(True)  # outside the listened location: nothing to deliver
        root.child("zz-end").set(True)
        tree = None
        while True:
            event = events.get(timeout=10)
            segments = [s for s in event.path.split("/") if s]
            if event.event_type == "put":
                tree = setting(tree, segments, event.data)
            else:
                assert event.event_type == "patch"
                for relative, v in event.data.items():
                    tree = setting(tree, segments + [s for s in relative.split("/") if s], v)
            if event.path == "/zz-end":
                break
        assert json.dumps(tree, sort_keys=True) == json.dumps(normalized(root.get()), sort_keys=True)
    finally:
        import threading
        threading.Timer(0.3, lambda: root.child("wake").set(True)).start()
        registration.close()


def test_a_listen_after_a_restart_starts_from_the_file_while_the_namespace_loads():
    """A restarted daemon loads a namespace's whole tree before it takes writes; firebase-admin's `listen` (SSE) is
    answered from the file meanwhile (Architecture.md, "Reads while a namespace loads"). The stream must then go
    on as any other: its first value once, the write that waited for the load next, nothing twice."""
    import queue

    import firebase_admin
    from conftest import early_reads, rest, restarted_with_large_namespace

    server = restarted_with_large_namespace("big")
    app = firebase_admin.initialize_app(
        options={"databaseURL": f"{server.url}?ns=big", "projectId": "canopy-interop"}, name="restarted-big")
    events = queue.Queue()
    registration = db.reference("/items/k05000/f3", app=app).listen(lambda event: events.put(event))
    try:
        opening = events.get(timeout=60)
        assert opening.event_type == "put" and opening.path == "/" and opening.data == "x" * 40
        # A write needs the whole tree: it is answered once the namespace is loaded.
        rest(server, "PUT", "/items/k05000/f3.json?ns=big", "changed")
        change = events.get(timeout=30)
        assert change.event_type == "put" and change.path == "/" and change.data == "changed"
        assert early_reads(server) >= 1, "the listen waited for the load instead"
        rest(server, "PUT", "/items/k05000/f3.json?ns=big", "again")
        assert events.get(timeout=30).data == "again"
        assert events.empty()
    finally:
        # close() returns once the listener thread wakes up: a write to the listened leaf wakes it now.
        threading.Timer(0.3, lambda: rest(server, "PUT", "/items/k05000/f3.json?ns=big", "woken")).start()
        registration.close()
        firebase_admin.delete_app(app)
        server.stop()
