"""The throwaway PKI, made with ``cryptography``: the files, the CA, the SANs, the token file.

The same outputs as when it was made with the ``openssl`` command (file names, PEM kinds, the
serving names, a CA that signs the serving certificate, 0600 secrets in a 0700 directory), checked
with ``cryptography`` itself, and made with no process spawned and no ``openssl`` on the PATH.
tests/integration/test_devcluster.py runs a kube-apiserver on them.
"""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from eqdev.cluster.pki import (
    ADMIN_GROUPS,
    ADMIN_USER,
    SERVING_DNS_NAMES,
    SERVING_IPS,
    Pki,
    PkiError,
    create_pki,
    subject_alt_names,
    token_file_line,
)


def test_subject_alt_names() -> None:
    names = subject_alt_names(["localhost", "kubernetes"], ["127.0.0.1"])
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "kubernetes"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_token_file_line() -> None:
    line = token_file_line("abc", "admin", ["system:masters", "other"])
    assert line == 'abc,admin,admin,"system:masters,other"\n'
    with pytest.raises(ValueError):
        token_file_line("a,b", "admin", ["system:masters"])


@pytest.fixture
def pki(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Pki:
    """A PKI made with no openssl to be found and no process allowed to start."""

    def no_process(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(subprocess, "Popen", no_process)
    return create_pki(tmp_path / "pki")


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_files_are_where_the_control_plane_reads_them(pki: Pki) -> None:
    assert {path.name for path in pki.directory.iterdir()} == {
        "ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "sa.key", "sa.pub", "tokens.csv",
    }  # fmt: skip
    assert pki.directory.stat().st_mode & 0o777 == 0o700
    for secret in (pki.ca_key, pki.serving_key, pki.service_account_key, pki.token_file):
        assert secret.stat().st_mode & 0o777 == 0o600, secret.name
    for key in (pki.ca_key, pki.serving_key, pki.service_account_key):
        assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----"), key.name  # PKCS#8
    assert pki.service_account_pub.read_text().startswith("-----BEGIN PUBLIC KEY-----")


def test_the_ca_signs_the_serving_certificate_for_the_serving_names(pki: Pki) -> None:
    ca = certificate(pki.ca_cert)
    serving = certificate(pki.serving_cert)
    serving.verify_directly_issued_by(ca)  # raises unless the CA's key signed it
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert serving.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    serving_usage = serving.extensions.get_extension_for_class(x509.KeyUsage).value
    # An elliptic-curve key signs; RFC 5480 forbids it key encipherment.
    assert serving_usage.digital_signature and not serving_usage.key_encipherment
    assert not serving_usage.key_cert_sign
    usage = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == list(SERVING_DNS_NAMES)
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == list(SERVING_IPS)
    now = datetime.datetime.now(datetime.UTC)
    for cert in (ca, serving):
        assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
        assert cert.not_valid_after_utc - now > datetime.timedelta(days=29)


def test_each_key_belongs_to_its_certificate(pki: Pki) -> None:
    for cert_path, key_path in ((pki.ca_cert, pki.ca_key), (pki.serving_cert, pki.serving_key)):
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
        assert certificate(cert_path).public_key() == key.public_key()
    account = serialization.load_pem_private_key(pki.service_account_key.read_bytes(), None)
    public = serialization.load_pem_public_key(pki.service_account_pub.read_bytes())
    assert account.public_key() == public


def test_the_token_maps_to_the_admin(pki: Pki, tmp_path: Path) -> None:
    assert len(pki.token) == 64
    groups = ",".join(ADMIN_GROUPS)
    assert pki.token_file.read_text() == f'{pki.token},{ADMIN_USER},{ADMIN_USER},"{groups}"\n'
    other = create_pki(tmp_path / "other")
    assert other.token != pki.token
    assert certificate(other.ca_cert).fingerprint(hashes.SHA256()) != certificate(
        pki.ca_cert
    ).fingerprint(hashes.SHA256())


def test_a_directory_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(PkiError, match=r"cannot write the local PKI in .*taken/pki"):
        create_pki(blocker / "pki")
