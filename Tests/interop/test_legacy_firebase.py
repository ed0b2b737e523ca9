"""PyPI `firebase` 4.0.1 (the old python-firebase API): legacy tokens signed with the database secret, REST params."""
import pytest
import requests
from firebase.firebase import FirebaseApplication, FirebaseAuthentication

from conftest import database_secret

RULES = '{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid"}}}}'


def application(server, authentication):
    # FirebaseApplication insists on an https DSN; the daemon under test speaks plain HTTP on loopback.
    app = FirebaseApplication("https://canopy.invalid", authentication)
    app.dsn = server.url
    return app


@pytest.fixture()
def closed(fresh_server):
    r = requests.put(f"{fresh_server.url}/.settings/rules.json", data=RULES,
                     headers={"Authorization": f"Bearer {fresh_server.admin}"})
    assert r.status_code == 200
    return fresh_server


def test_a_legacy_token_is_its_payload_to_the_rules(closed):
    secret = database_secret(closed)
    ada = application(closed, FirebaseAuthentication(secret, "ada@example.com", extra={"uid": "ada"}))
    ada.put("/users", "ada", {"name": "Ada"})
    assert ada.get("/users", "ada") == {"name": "Ada"}
    with pytest.raises(requests.HTTPError) as refused:
        ada.get("/users", "bob")
    assert refused.value.response.status_code == 401
    with pytest.raises(requests.HTTPError):
        ada.put("/users", "bob", {"name": "not Ada"})


def test_admin_true_bypasses_the_rules(closed):
    secret = database_secret(closed)
    admin = application(closed, FirebaseAuthentication(secret, "ops@example.com", admin=True))
    admin.put("/users", "bob", {"name": "Bob"})
    assert admin.get("/users", None) == {"bob": {"name": "Bob"}}


def test_another_secret_is_refused(closed):
    forged = application(closed, FirebaseAuthentication("not-the-secret", "x@example.com", admin=True))
    with pytest.raises(requests.HTTPError) as refused:
        forged.get("/users", None)
    assert refused.value.response.status_code == 401


def test_rest_parameters_are_validated(closed):
    admin = application(closed, FirebaseAuthentication(database_secret(closed), "ops@example.com", admin=True))
    admin.put("/users", "carl", {"n": 1})
    assert admin.get("/users", "carl", params={"timeout": "3s"}) == {"n": 1}
    for bad in ({"timeout": "3h"}, {"timeout": "16min"}, {"writeSizeLimit": "huge"}):
        with pytest.raises(requests.HTTPError) as refused:
            admin.get("/users", "carl", params=bad)
        assert refused.value.response.status_code == 400
    big = {f"k{i}": i for i in range(1500)}
    with pytest.raises(requests.HTTPError) as too_big:
        admin.put("/users", "big", big, params={"writeSizeLimit": "tiny"})
    assert "write_too_big" in too_big.value.response.text
    assert admin.get("/users", "big") is None
    admin.put("/users", "big", big, params={"writeSizeLimit": "small"})
    assert len(admin.get("/users", "big")) == 1500


def test_priority_download_override_and_rules_text(closed):
    admin_auth = FirebaseAuthentication(database_secret(closed), "ops@example.com", admin=True)
    admin = application(closed, admin_auth)
    admin.put("/users", "dora", {".value": "D", ".priority": 3})
    assert admin.get("/users/dora", ".priority") == 3
    token = admin_auth.get_user().firebase_auth_token
    url = f"{closed.url}/users/dora.json"
    download = requests.get(url, params={"auth": token, "download": "dora.json"})
    assert download.headers["Content-Disposition"] == 'attachment; filename="dora.json"'
    bogus = requests.post(f"{closed.url}/users.json", params={"auth": token}, data="1",
                          headers={"X-HTTP-Method-Override": "BOGUS"})
    assert bogus.status_code == 400
    assert admin.get("/users", None).keys() == {"dora"}
    rules = '{\n  // kept as written\n  "rules": {".read": "auth != null\n     && auth.uid != null"}\n}'
    put = requests.put(f"{closed.url}/.settings/rules.json", data=rules,
                       headers={"Authorization": f"Bearer {closed.admin}"})
    assert put.status_code == 200
    assert requests.get(f"{closed.url}/.settings/rules.json",
                        headers={"Authorization": f"Bearer {closed.admin}"}).text == rules
