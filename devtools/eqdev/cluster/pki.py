"""Throwaway certificates and a bearer token for a local control plane.

Each :class:`~eqdev.cluster.cluster.LocalCluster` gets its own CA, a serving certificate
for kube-apiserver (SANs ``127.0.0.1``, ``localhost``, ``kubernetes``, ``kubernetes.default``),
a service-account signing key pair and a static token file that maps a random token to
``system:masters``. Everything is made with the ``openssl`` command (no Python crypto dependency),
uses P-256 keys (instant to generate) and lives in the cluster's run directory, which is deleted
when the cluster stops.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SERVING_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
)
SERVING_IPS = ("127.0.0.1",)
ADMIN_USER = "elastic-quota-admin"
ADMIN_GROUPS = ("system:masters",)
VALID_DAYS = 30


class PkiError(RuntimeError):
    """``openssl`` failed; the message carries its stderr."""


@dataclass(frozen=True)
class Pki:
    """Paths of the generated files, and the admin token."""

    directory: Path
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path
    token_file: Path
    token: str


def subject_alt_names(dns_names: Sequence[str], ips: Sequence[str]) -> str:
    """An openssl ``subjectAltName`` value: ``DNS:localhost,...,IP:127.0.0.1``."""
    return ",".join([*(f"DNS:{n}" for n in dns_names), *(f"IP:{ip}" for ip in ips)])


def token_file_line(token: str, user: str, groups: Sequence[str]) -> str:
    """A kube-apiserver ``--token-auth-file`` line: ``token,user,uid,"group1,group2"``."""
    if any(c in token for c in ',"\n'):
        raise ValueError("a token must not contain commas, quotes or newlines")
    return f'{token},{user},{user},"{",".join(groups)}"\n'


def openssl_config(common_name: str, san: str) -> str:
    """Minimal openssl configuration: the subject and the CA and server extensions."""
    return "\n".join(
        [
            "[req]",
            "distinguished_name = dn",
            "prompt = no",
            "[dn]",
            f"CN = {common_name}",
            "[v3_ca]",
            "basicConstraints = critical,CA:TRUE",
            "keyUsage = critical,keyCertSign,cRLSign,digitalSignature",
            "subjectKeyIdentifier = hash",
            "[v3_server]",
            "basicConstraints = critical,CA:FALSE",
            "keyUsage = critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage = serverAuth",
            "authorityKeyIdentifier = keyid",
            f"subjectAltName = {san}",
            "",
        ]
    )


def _openssl(*args: str, openssl: str = "openssl") -> None:
    try:
        done = subprocess.run([openssl, *args], capture_output=True, text=True, check=False)
    except OSError as error:
        raise PkiError(f"cannot run {openssl}: {error}") from error
    if done.returncode != 0:
        raise PkiError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def _ec_key(path: Path, openssl: str) -> None:
    _openssl(
        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-out", str(path), openssl=openssl,
    )  # fmt: skip
    path.chmod(0o600)


def create_pki(directory: Path, *, openssl: str = "openssl") -> Pki:
    """Generate the CA, the serving certificate, the service-account keys and the token file."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    pki = Pki(
        directory=directory,
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
        token_file=directory / "tokens.csv",
        token=secrets.token_hex(32),
    )
    _certificates(pki, openssl)
    _ec_key(pki.service_account_key, openssl)
    _openssl(
        "pkey", "-in", str(pki.service_account_key), "-pubout",
        "-out", str(pki.service_account_pub), openssl=openssl,
    )  # fmt: skip
    pki.token_file.write_text(token_file_line(pki.token, ADMIN_USER, ADMIN_GROUPS))
    pki.token_file.chmod(0o600)
    return pki


def _certificates(pki: Pki, openssl: str) -> None:
    config = pki.directory / "openssl.cnf"
    config.write_text(
        openssl_config("kube-apiserver", subject_alt_names(SERVING_DNS_NAMES, SERVING_IPS))
    )
    ca_config = pki.directory / "ca.cnf"
    ca_config.write_text(openssl_config("elastic-quota-local-ca", "DNS:localhost"))
    _ec_key(pki.ca_key, openssl)
    _openssl(
        "req", "-x509", "-new", "-key", str(pki.ca_key), "-config", str(ca_config),
        "-extensions", "v3_ca", "-days", str(VALID_DAYS), "-out", str(pki.ca_cert),
        openssl=openssl,
    )  # fmt: skip
    _ec_key(pki.serving_key, openssl)
    csr = pki.directory / "apiserver.csr"
    _openssl(
        "req", "-new", "-key", str(pki.serving_key), "-config", str(config), "-out", str(csr),
        openssl=openssl,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(pki.ca_cert), "-CAkey", str(pki.ca_key),
        "-set_serial", str(secrets.randbits(63)), "-days", str(VALID_DAYS),
        "-extfile", str(config), "-extensions", "v3_server", "-out", str(pki.serving_cert),
        openssl=openssl,
    )  # fmt: skip
