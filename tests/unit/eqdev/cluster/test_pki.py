"""The throwaway PKI: SANs, the token file and real certificates from openssl."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eqdev.cluster.pki import (
    ADMIN_USER,
    create_pki,
    subject_alt_names,
    token_file_line,
)


def test_subject_alt_names() -> None:
    assert subject_alt_names(["localhost", "kubernetes"], ["127.0.0.1"]) == (
        "DNS:localhost,DNS:kubernetes,IP:127.0.0.1"
    )


def test_token_file_line() -> None:
    line = token_file_line("abc", "admin", ["system:masters", "other"])
    assert line == 'abc,admin,admin,"system:masters,other"\n'
    with pytest.raises(ValueError):
        token_file_line("a,b", "admin", ["system:masters"])


def _openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True).stdout


def test_create_pki(tmp_path: Path) -> None:
    pki = create_pki(tmp_path / "pki")
    assert "OK" in _openssl("verify", "-CAfile", str(pki.ca_cert), str(pki.serving_cert))
    san = _openssl("x509", "-in", str(pki.serving_cert), "-noout", "-ext", "subjectAltName")
    for name in (
        "DNS:localhost",
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "IP Address:127.0.0.1",
    ):
        assert name in san
    assert "PUBLIC KEY" in pki.service_account_pub.read_text()
    assert len(pki.token) == 64
    assert pki.token_file.read_text().startswith(f"{pki.token},{ADMIN_USER},")
    assert pki.ca_key.stat().st_mode & 0o077 == 0
    assert create_pki(tmp_path / "other").token != pki.token
