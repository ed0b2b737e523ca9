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
    db = db_for(server)
    try:
        db.child("pyrebase").child("secret").get()
        raised = False
    except Exception as error:  # pyrebase raises requests.HTTPError
        raised = "401" in str(error) or "Permission denied" in str(error)
    assert raised
