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
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
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


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
    not_after: datetime.datetime,
) -> x509.CertificateBuilder:
    """The head every certificate shares: names, the key, a random serial and a validity from
    ``now`` (backdated by ``CLOCK_SKEW``) to ``not_after``; the caller adds its extensions."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(not_after)
    )


def _private_key_pem(
    key: ec.EllipticCurvePrivateKey,
    encryption: serialization.KeySerializationEncryption | None = None,
) -> bytes:
    """PKCS#8 PEM, unencrypted unless an ``encryption`` is given."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        encryption or serialization.NoEncryption(),
    )


def _usage(*, cert_sign: bool, crl_sign: bool) -> x509.KeyUsage:
    """Digital signatures always (an ECDSA key's TLS handshake); certificate and CRL signing as
    asked (a CA both, a serving certificate neither, the self-signed one certificates only); never
    key or data encipherment, which RFC 5480 forbids for elliptic-curve keys."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


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
        _builder(subject, subject, key, now, now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=True, crl_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), _private_key_pem(key, encryption)


# -- the operator-managed certificate: a CA of its own and a serving certificate it signs -------
#
# Kept in a Secret (``controller.webhooks.certrotation``): the CA lives long (``ca_days``) and stays
# the webhook configurations' caBundle; the serving certificate is renewed well before it expires,
# signed by the same CA, so a renewal changes nothing the API server trusts. Only a CA near its own
# end (or a Secret that is missing or unusable) makes a new CA and with it a new caBundle.

CA_KEY = "ca.key"
CA_CERT = "ca.crt"
TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
#: The Secret's keys: the serving pair as a kubernetes.io/tls Secret has it, the CA and its key.
SECRET_KEYS = (TLS_CERT, TLS_KEY, CA_CERT, CA_KEY)


def make_authority(common_name: str, days: int, now: datetime.datetime) -> dict[str, bytes]:
    """A new CA: ``{ca.crt, ca.key}`` (PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (
        _builder(name, name, key, now, now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True, crl_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return {
        CA_CERT: certificate.public_bytes(serialization.Encoding.PEM),
        CA_KEY: _private_key_pem(key),
    }


def make_serving(
    authority: dict[str, bytes], dns_names: Iterable[str], days: int, now: datetime.datetime
) -> dict[str, bytes]:
    """A serving certificate for ``dns_names`` signed by ``authority``: ``{tls.crt, tls.key}``."""
    names = list(dict.fromkeys(name for name in dns_names if name))
    if not names:
        raise ValueError("a webhook certificate needs at least one DNS name")
    ca_certificate = x509.load_pem_x509_certificate(authority[CA_CERT])
    ca_key = serialization.load_pem_private_key(authority[CA_KEY], password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an elliptic-curve key")
    key = ec.generate_private_key(ec.SECP256R1())
    # Never valid beyond its CA: a client would refuse it from then on anyway.
    not_after = min(now + datetime.timedelta(days=days), ca_certificate.not_valid_after_utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    certificate = (
        _builder(subject, ca_certificate.subject, key, now, not_after)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False, crl_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return {
        TLS_CERT: certificate.public_bytes(serialization.Encoding.PEM),
        TLS_KEY: _private_key_pem(key),
    }


def renewal_reason(
    data: dict[str, bytes],
    dns_names: Iterable[str],
    renew_before: datetime.timedelta,
    now: datetime.datetime,
) -> str | None:
    """Why the stored certificate must be replaced, or None while it is good.

    A reason starting with ``"unusable"`` means it cannot be served at all (missing keys,
    unreadable PEM, a key that does not match, not signed by the CA): anyone may replace it. The
    others (expiring within ``renew_before``, names that changed) are planned renewals."""
    missing = [key for key in SECRET_KEYS if not data.get(key)]
    if missing:
        return f"unusable: no {', '.join(missing)}"
    try:
        ca_certificate = x509.load_pem_x509_certificate(data[CA_CERT])
        certificate = x509.load_pem_x509_certificate(data[TLS_CERT])
        key = serialization.load_pem_private_key(data[TLS_KEY], password=None)
        ca_key = serialization.load_pem_private_key(data[CA_KEY], password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as error:  # TypeError: an encrypted key
        return f"unusable: unreadable PEM ({error})"
    if key.public_key() != certificate.public_key():
        return "unusable: tls.key is not the key of tls.crt"
    if ca_key.public_key() != ca_certificate.public_key():
        return "unusable: ca.key is not the key of ca.crt"
    if certificate.issuer != ca_certificate.subject:
        return "unusable: tls.crt is not issued by ca.crt"
    try:
        certificate.verify_directly_issued_by(ca_certificate)
    except (ValueError, TypeError, InvalidSignature):
        return "unusable: tls.crt is not signed by ca.crt"
    for what, cert in (("the CA", ca_certificate), ("the serving certificate", certificate)):
        if cert.not_valid_after_utc - renew_before <= now:
            return f"{what} expires at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
    wanted = sorted(dict.fromkeys(name for name in dns_names if name))
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        have = sorted(names.value.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        have = []
    if have != wanted:
        return f"its names {have} are not {wanted}"
    return None


def authority_usable(
    data: dict[str, bytes], renew_before: datetime.timedelta, now: datetime.datetime
) -> bool:
    """Whether the stored CA can sign the next serving certificate: readable, its key matching,
    not within ``renew_before`` of its end (else a renewal makes a new CA, and a new caBundle)."""
    try:
        ca_certificate = x509.load_pem_x509_certificate(data[CA_CERT])
        ca_key = serialization.load_pem_private_key(data[CA_KEY], password=None)
    except (KeyError, ValueError, TypeError, UnsupportedAlgorithm):
        return False
    if ca_key.public_key() != ca_certificate.public_key():
        return False
    return ca_certificate.not_valid_after_utc - renew_before > now
