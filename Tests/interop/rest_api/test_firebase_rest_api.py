"""PyPI `firebase-rest-api` 1.11.0 against the real canopy serve (its own venv: it shares the `firebase` module name
with PyPI's `firebase` 4.0.1). It cannot send ?ns=, so each test uses a daemon of its own and its default namespace."""
import pytest
import requests
import firebase

from conftest import mint

RULES = '{"rules": {"users": {"$uid": {".read": "auth.token.userId == $uid", ".write": "auth.token.userId == $uid"}},' \
        ' "board": {".read": true, ".write": "auth != null", ".indexOn": ["score"]}}}'


@pytest.fixture()
def db(fresh_server):
    r = requests.put(f"{fresh_server.url}/.settings/rules.json", data=RULES,
                     headers={"Authorization": f"Bearer {fresh_server.admin}"})
    assert r.status_code == 200
    config = {"apiKey": "unused", "authDomain": "unused", "databaseURL": fresh_server.url, "projectId": "unused",
              "storageBucket": "unused"}
    database = firebase.initialize_app(config).database()
    database.server = fresh_server
    return database


def test_crud_queries_and_rules(db):
    ada = mint(db.server, "--claims", '{"userId": "ada"}', "--ttl", "10m")
    db.child("users").child("ada").set({"name": "Ada"}, token=ada)
    assert db.child("users").child("ada").get(token=ada).val() == {"name": "Ada"}
    with pytest.raises(requests.HTTPError):
        db.child("users").child("bob").get(token=ada)
    for name, score in [("a", 3), ("b", 9), ("c", 5)]:
        db.child("board").child(name).set({"score": score}, token=ada)
    top = db.child("board").order_by_child("score").limit_to_last(2).get()
    assert [item.key() for item in top.each()] == ["c", "b"]
    pushed = db.child("board").push({"score": 1}, token=ada)
    assert len(pushed["name"]) == 20
    db.child("board").child("a").update({"score": 4}, token=ada)
    assert db.child("board").child("a").get().val() == {"score": 4}
    assert sorted(db.child("board").shallow().get().val()) == sorted(["a", "b", "c", pushed["name"]])
    db.child("board").child("a").remove(token=ada)
    assert db.child("board").child("a").get().val() is None


def test_conditional_writes_follow_the_etag(db):
    ada = mint(db.server, "--claims", '{"userId": "ada"}', "--ttl", "10m")
    db.child("users").child("ada").set({"n": 1}, token=ada)
    etag = db.child("users").child("ada").get_etag(token=ada)
    db.child("users").child("ada").conditional_set({"n": 2}, etag, token=ada)
    assert db.child("users").child("ada").get(token=ada).val() == {"n": 2}
    stale = db.child("users").child("ada").conditional_set({"n": 3}, etag, token=ada)
    # The client answers a 412 with the current ETag instead of raising.
    assert stale["ETag"] not in (None, etag)
    assert db.child("users").child("ada").get(token=ada).val() == {"n": 2}
