"""firebase-admin (Python) over HTTPS: `canopy serve --tls-cert/--tls-key` with a throw-away CA made by `openssl`.

The SDK speaks TLS through `requests`, so it trusts the CA through REQUESTS_CA_BUNDLE; an https URL is a
production URL to it (no `ns`, the default namespace), authorized by a static token: the admin credential.
"""
import os
import subprocess
import tempfile
import uuid

import pytest

from conftest import Server


def openssl(directory, *args):
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates():
    directory = tempfile.mkdtemp(prefix="canopy-tls-")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl(directory, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=Canopy Interop CA")
    with open(os.path.join(directory, "san.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(directory, "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    openssl(directory, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-set_serial", "0x5005", "-days", "1", "-extfile", "san.cnf", "-out", "server.pem")
    return directory


@pytest.fixture()
def tls_server(certificates):
    s = Server("--tls-cert", os.path.join(certificates, "server.pem"),
               "--tls-key", os.path.join(certificates, "server.key"))
    yield s
    s.stop()


class StaticToken:
    """A firebase_admin credential presenting a fixed bearer token (Canopy's admin credential)."""

    def __init__(self, token):
        from google.oauth2 import credentials
        self._credential = credentials.Credentials(token)

    def get_credential(self):
        return self._credential


def admin_app(server, ca_file):
    import firebase_admin
    from firebase_admin import credentials

    class Credential(credentials.Base):
        def __init__(self):
            self.inner = StaticToken(server.admin)

        def get_credential(self):
            return self.inner.get_credential()

    return firebase_admin.initialize_app(
        Credential(), options={"databaseURL": server.url, "projectId": "canopy-interop"},
        name="tls-" + uuid.uuid4().hex[:8])


def test_firebase_admin_over_https_with_the_ca(tls_server, certificates, monkeypatch):
    import firebase_admin
    from firebase_admin import db
    assert tls_server.url.startswith("https://")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", os.path.join(certificates, "ca.pem"))
    app = admin_app(tls_server, os.path.join(certificates, "ca.pem"))
    try:
        r = db.reference("tls/check", app=app)
        r.set({"secure": True, "n": 1})
        assert r.get() == {"secure": True, "n": 1}
        r.child("n").transaction(lambda n: (n or 0) + 1)
        assert r.child("n").get() == 2
    finally:
        firebase_admin.delete_app(app)


def test_requests_refuses_a_server_it_does_not_trust(tls_server, monkeypatch):
    # The transport firebase-admin uses, without the CA: the certificate is refused. (Through firebase-admin
    # itself the refusal is the same, after minutes of its own retries.)
    import requests
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    with pytest.raises(requests.exceptions.SSLError, match="certificate verify failed"):
        requests.get(tls_server.url + "/.json", timeout=5)


def test_plain_http_to_the_tls_port_gets_a_clear_400(tls_server):
    import requests
    plain = tls_server.url.replace("https://", "http://")
    response = requests.get(plain + "/.json", timeout=5)
    assert response.status_code == 400
    assert "HTTPS" in response.json()["error"]
