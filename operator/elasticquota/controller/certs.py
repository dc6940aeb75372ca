"""A self-signed serving certificate for the admission webhooks, made in memory.

The API server calls webhooks over HTTPS only and checks the certificate against the CA bundle of
the webhook configuration. For local runs (and whenever no certificate is provided) the operator
makes its own at start-up: one self-signed certificate, valid for the names and addresses the API
server uses (subject alternative names: Go's TLS ignores the common name), which is also its own
CA bundle. It lives only in memory and in the webhook server; a restart makes a new one and the
managed webhook configurations get the new bundle. Clusters that need a stable certificate (e.g.
cert-manager's) pass its files through the settings instead.

Made with ``cryptography`` (P-256: instant to generate) rather than Kopf's optional
``certbuilder`` extra.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 365
#: Backdated a little so that an API server whose clock is slightly behind accepts it at once.
CLOCK_SKEW = datetime.timedelta(hours=1)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def split_names(hostnames: Iterable[str]) -> tuple[list[str], list[IPAddress]]:
    """DNS names and IP addresses, deduplicated in order; unspecified addresses (0.0.0.0, ::)
    are dropped (one can listen on them, never connect to them)."""
    dns: list[str] = []
    ips: list[IPAddress] = []
    for name in hostnames:
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            if name and name not in dns:
                dns.append(name)
            continue
        if not ip.is_unspecified and ip not in ips:
            ips.append(ip)
    return dns, ips


def self_signed_certificate(
    hostnames: Iterable[str], password: str | None = None, days: int = VALID_DAYS
) -> tuple[bytes, bytes]:
    """A PEM certificate (its own CA) and its PEM private key, for these host names / IPs."""
    dns, ips = split_names(hostnames)
    if not dns and not ips:
        raise ValueError("a webhook certificate needs at least one host name or IP address")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns[0] if dns else str(ips[0]))])
    now = datetime.datetime.now(datetime.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    alt_names += [x509.IPAddress(ip) for ip in ips]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem
