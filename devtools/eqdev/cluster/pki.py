"""Throwaway certificates and a bearer token for a local control plane.

Each :class:`~eqdev.cluster.cluster.LocalCluster` gets its own CA, a serving certificate
for kube-apiserver (SANs ``127.0.0.1``, ``localhost``, ``kubernetes``, ``kubernetes.default``,
``kubernetes.default.svc``), a service-account signing key pair and a static token file that maps
a random token to ``system:masters``. Everything is made in process with the ``cryptography``
library (a dependency of the operator already: ``elasticquota.controller.webhooks.certs``), so no
``openssl`` command is needed or spawned; keys are P-256 (instant to generate), private keys PKCS#8
PEM with mode 0600, the public key SubjectPublicKeyInfo PEM, and all of it lives in the cluster's
run directory (mode 0700), which is deleted when the cluster stops.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVING_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
)
SERVING_IPS = ("127.0.0.1",)
ADMIN_USER = "elastic-quota-admin"
ADMIN_GROUPS = ("system:masters",)
CA_NAME = "elastic-quota-local-ca"
SERVING_NAME = "kube-apiserver"
VALID_DAYS = 30
#: Backdated a little so that a component whose clock is slightly behind accepts them at once.
CLOCK_SKEW = datetime.timedelta(minutes=5)


class PkiError(RuntimeError):
    """The PKI could not be written; the message names the directory and the system's error."""


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


def subject_alt_names(dns_names: Sequence[str], ips: Sequence[str]) -> x509.SubjectAlternativeName:
    """The ``subjectAltName`` extension: the DNS names, then the IP addresses."""
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    return x509.SubjectAlternativeName(names)


def token_file_line(token: str, user: str, groups: Sequence[str]) -> str:
    """A kube-apiserver ``--token-auth-file`` line: ``token,user,uid,"group1,group2"``."""
    if any(c in token for c in ',"\n'):
        raise ValueError("a token must not contain commas, quotes or newlines")
    return f'{token},{user},{user},"{",".join(groups)}"\n'


def _write_private(path: Path, data: bytes) -> None:
    """Write a secret: created with mode 0600, never readable by others even for a moment."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity(builder: x509.CertificateBuilder, now: datetime.datetime) -> x509.CertificateBuilder:
    return builder.not_valid_before(now - CLOCK_SKEW).not_valid_after(
        now + datetime.timedelta(days=VALID_DAYS)
    )


def key_usage(*, ca: bool) -> x509.KeyUsage:
    """A CA signs certificates (and CRLs); a server signs its TLS handshakes. Never key
    encipherment, which RFC 5480 forbids for the elliptic-curve keys made here (as the operator's
    own webhook certificates, ``elasticquota.controller.webhooks.certs``)."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def make_ca(
    now: datetime.datetime,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA (``CA:TRUE``, keyCertSign and cRLSign) and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    identifier = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(CA_NAME))
        .issuer_name(_name(CA_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(key_usage(ca=True), critical=True)
        .add_extension(identifier, critical=False)
    )
    return key, _validity(builder, now).sign(key, hashes.SHA256())


def make_serving(
    ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, now: datetime.datetime
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """kube-apiserver's serving certificate, signed by the CA, valid for the serving names."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca_identifier = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(SERVING_NAME))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_identifier),
            critical=False,
        )
        .add_extension(subject_alt_names(SERVING_DNS_NAMES, SERVING_IPS), critical=False)
    )
    return key, _validity(builder, now).sign(ca_key, hashes.SHA256())


def create_pki(directory: Path) -> Pki:
    """Generate the CA, the serving certificate, the service-account keys and the token file."""
    try:
        return _create(directory)
    except OSError as error:
        raise PkiError(f"cannot write the local PKI in {directory}: {error}") from error


def _create(directory: Path) -> Pki:
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
    now = datetime.datetime.now(datetime.UTC)
    ca_key, ca = make_ca(now)
    serving_key, serving = make_serving(ca_key, ca, now)
    _write_private(pki.ca_key, _private_pem(ca_key))
    pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_private(pki.serving_key, _private_pem(serving_key))
    pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    account_key = ec.generate_private_key(ec.SECP256R1())
    _write_private(pki.service_account_key, _private_pem(account_key))
    pki.service_account_pub.write_bytes(
        account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    _write_private(pki.token_file, token_file_line(pki.token, ADMIN_USER, ADMIN_GROUPS).encode())
    return pki
