"""pyrebase4 against the real canopy serve: it cannot send ?ns=, so it lands in the default namespace."""
import pyrebase


def db_for(server):
    config = {"apiKey": "unused", "authDomain": "unused", "databaseURL": server.url, "storageBucket": "unused"}
    return pyrebase.initialize_app(config).database()


def test_pyrebase_crud(server):
    db = db_for(server)
    token = server.admin
    db.child("pyrebase").child("a").set({"x": 1}, token)
    assert db.child("pyrebase").child("a").get(token).val() == {"x": 1}
    pushed = db.child("pyrebase").push({"y": 2}, token)
    assert len(pushed["name"]) == 20
    db.child("pyrebase").child("a").update({"z": 3}, token)
    assert dict(db.child("pyrebase").child("a").get(token).val()) == {"x": 1, "z": 3}
    db.child("pyrebase").child("a").remove(token)
    assert db.child("pyrebase").child("a").get(token).val() is None


def test_pyrebase_without_credential_is_denied(server):
    import requests
    # Emulator namespaces start with open rules (like Firebase's emulator); close this one first.
    r = requests.put(f"{server.url}/.settings/rules.json", data='{"rules":{"pyrebase":{"secret":{".read":false}}}}',
                     headers={"Authorization": "Bearer owner"})
    assert r.status_code == 200
    db = db_for(server)
    try:
        db.child("pyrebase").child("secret").get()
        raised = False
    except Exception as error:  # pyrebase raises requests.HTTPError
        raised = "401" in str(error) or "Permission denied" in str(error)
    assert raised


def test_pyrebase_stream(server):
    import queue
    db = db_for(server)
    token = server.admin
    db.child("pystream").set({"n": 1}, token)
    events = queue.Queue()
    stream = db.child("pystream").stream(lambda message: events.put(message), token)
    try:
        first = events.get(timeout=10)
        assert first["event"] == "put" and first["path"] == "/" and first["data"] == {"n": 1}
        db.child("pystream").child("m").set({"x": 2}, token)
        second = events.get(timeout=10)
        assert second["path"] == "/m" and second["data"] == {"x": 2}
        db.child("pystream").update({"n": 3, "m/y": True}, token)
        third = events.get(timeout=10)
        # One patch for the update; its keys are immediate children, each with its whole new value.
        assert third["event"] == "patch" and third["path"] == "/" and third["data"] == {"n": 3, "m": {"x": 2, "y": True}}
    finally:
        try:
            stream.close()
        except AttributeError:
            pass  # pyrebase4 4.9.0's close() races its own reader thread (response already torn down)
