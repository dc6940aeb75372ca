"""The admission webhooks' server: its settings and its certificate.

Rules (controller/webhooks/): the server's address, port and host and the managed configurations
come from the settings; a provided certificate is used as is, else the server makes a self-signed
one naming every host (not the unspecified addresses), without Kopf's extras.
"""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509

from elasticquota.controller.runner import kopf_settings
from elasticquota.controller.webhooks import WebhookServer
from elasticquota.controller.webhooks.certs import self_signed_certificate, split_names
from elasticquota.settings import Settings


def test_the_server_and_the_managed_configurations_come_from_the_settings(
    make_settings: Callable[..., Settings],
) -> None:
    tuned = kopf_settings(
        make_settings(webhook_port=9443, webhook_address="127.0.0.1", webhook_host="eq.svc")
    )
    server = tuned.admission.server
    assert isinstance(server, WebhookServer)
    assert (server.addr, server.port, server.host) == ("127.0.0.1", 9443, "eq.svc")
    assert (server.certfile, server.pkeyfile, server.cafile) == (None, None, None)
    assert tuned.admission.managed == "elastic-quota-operator.elasticquota.dev"
    unmanaged = kopf_settings(make_settings(webhook_port=9443, webhook_configuration=""))
    assert unmanaged.admission.managed is None


def test_a_provided_certificate_is_used_as_is(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(
        webhook_port=9443, webhook_cert_file="/tls/tls.crt", webhook_key_file="/tls/tls.key",
        webhook_ca_file="/tls/ca.crt",
    )  # fmt: skip
    server = kopf_settings(settings).admission.server
    assert (server.certfile, server.pkeyfile, server.cafile) == (
        "/tls/tls.crt", "/tls/tls.key", "/tls/ca.crt",
    )  # fmt: skip
    with pytest.raises(ValueError, match="both or neither"):
        make_settings(webhook_port=9443, webhook_cert_file="/tls/tls.crt")


# -- the certificate ------------------------------------------------------------------------------


def test_the_self_signed_certificate_names_every_host_and_loads() -> None:
    cert_pem, key_pem = self_signed_certificate(["eq.svc", "127.0.0.1", "0.0.0.0", "eq.svc"])
    certificate = x509.load_pem_x509_certificate(cert_pem)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["eq.svc"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert certificate.issuer == certificate.subject  # its own CA: the caBundle is itself
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        client = ssl.create_default_context(cadata=cert_pem.decode())
        assert client.cert_store_stats()["x509_ca"] == 1


def test_the_server_makes_its_certificate_without_kopfs_extras() -> None:
    cert_pem, key_pem = WebhookServer.build_certificate(["localhost", "127.0.0.1"], "secret")
    assert b"ENCRYPTED PRIVATE KEY" in key_pem
    assert x509.load_pem_x509_certificate(cert_pem).subject.rfc4514_string() == "CN=localhost"


def test_unspecified_addresses_are_not_names() -> None:
    assert split_names(["0.0.0.0", "::", "a", "::1"]) == (["a"], [ipaddress.ip_address("::1")])
    with pytest.raises(ValueError, match="at least one"):
        self_signed_certificate(["0.0.0.0"])
