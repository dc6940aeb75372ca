"""The admission webhooks' server: its settings and its certificate.

Rules (controller/webhooks/): the server's address, port and host and the managed configurations
come from the settings; a provided certificate is used as is, else the server makes a self-signed
one naming every host (not the unspecified addresses), without Kopf's extras. A port it cannot
listen on is a ``ListenError`` naming the webhooks' settings (``run`` words it as a setting to
change); other errors pass as they are.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import ipaddress
import socket
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import aiohttp
import kopf
import pytest
from admission_reviews import POD_RESOURCE, serving
from cryptography import x509
from ports import reserved_port

from elasticquota.controller.runner import kopf_settings, make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import MUTATE_POD, VALIDATE_POD, WebhookServer
from elasticquota.controller.webhooks.certs import self_signed_certificate, split_names
from elasticquota.settings import ListenError, Settings

if TYPE_CHECKING:
    from conftest import Bodies


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
    assert server.file_check_interval == 1.0  # renewed files served within a second
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


def test_a_password_encrypts_the_self_signed_key() -> None:
    cert_pem, key_pem = self_signed_certificate(["localhost", "127.0.0.1"], "secret")
    assert b"ENCRYPTED PRIVATE KEY" in key_pem
    assert x509.load_pem_x509_certificate(cert_pem).subject.rfc4514_string() == "CN=localhost"


def test_unspecified_addresses_are_not_names() -> None:
    assert split_names(["0.0.0.0", "::", "a", "::1"]) == (["a"], [ipaddress.ip_address("::1")])
    with pytest.raises(ValueError, match="at least one"):
        self_signed_certificate(["0.0.0.0"])


async def never_called(*request: object, **details: object) -> object:
    raise AssertionError("no review is sent")


async def start(server: WebhookServer) -> None:
    """Run the server until it yields its first client configuration (it listens then)."""
    async for _ in server(cast(kopf.WebhookFn, never_called)):
        return


async def test_a_stopped_server_has_stopped_listening() -> None:
    """Kopf serves the webhooks inside ``async with server`` (its admission engine), whose exit
    closes what the server serves: the port is free at once."""
    server = WebhookServer(addr="127.0.0.1", host="127.0.0.1")  # a free port
    async with server:
        async for config in server(cast(kopf.WebhookFn, never_called)):
            port = urlsplit(config["url"] or "").port
            (await asyncio.open_connection("127.0.0.1", port))[1].close()  # it listens
            break
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_a_taken_port_is_a_listen_error_naming_the_webhook_settings() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()  # without SO_REUSEPORT: the server's reuse_port bind is refused
        port = taken.getsockname()[1]
        server = WebhookServer(addr="127.0.0.1", port=port, host="127.0.0.1")
        with pytest.raises(ListenError) as raised:
            await start(server)
    assert str(raised.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"
    assert raised.value.settings == ("webhook_port", "webhook_address")


async def test_an_address_not_of_this_host_is_a_listen_error_too() -> None:
    server = WebhookServer(addr="192.0.2.1", port=9443, host="eq.svc")  # TEST-NET-1
    with pytest.raises(ListenError) as raised:
        await start(server)
    assert str(raised.value) == "cannot listen on 192.0.2.1:9443: cannot assign requested address"


async def test_an_unreadable_certificate_is_not_a_listen_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "tls.crt")
    server = WebhookServer(addr="127.0.0.1", port=9443, certfile=missing, pkeyfile=missing)
    with pytest.raises(OSError) as raised:
        await start(server)
    assert raised.type is FileNotFoundError
    assert raised.value.errno == errno.ENOENT


def kopf_memos() -> int:
    """How many memos this process holds (Kopf's own memories keep one per object uid it was
    asked about in an UPDATE or DELETE, until a watch of Kopf's sees the object deleted)."""
    gc.collect()
    return sum(isinstance(item, kopf.Memo) for item in gc.get_objects())


async def test_the_server_keeps_no_memory_of_the_objects_it_was_asked_about(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    """The operator has no Kopf watch to forget them: every pod or workload ever updated (each
    gated pod, when its gate is removed) would stay in memory for the process's lifetime."""
    async with serving(make_registry(synced, webhook_settings)) as served:
        held = kopf_memos()
        for index in range(20):
            pod = k8s.pod(f"p{index}", quota="team")
            pod["metadata"]["uid"] = f"uid-{index}"
            for webhook in (MUTATE_POD, VALIDATE_POD):
                answer = await served.review(
                    webhook, POD_RESOURCE, operation="UPDATE", object=pod, oldObject=pod
                )
                assert answer["allowed"] is True
        assert kopf_memos() == held


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}}
PODS = {"group": "", "version": "v1", "resource": "pods"}
USER = {"username": "sue"}


@pytest.mark.parametrize(
    ("review", "reason"),
    [
        ({}, "not an AdmissionReview: no request object"),
        ([], "not an AdmissionReview: no request object"),
        ({"request": {"uid": "1", "object": POD, "userInfo": USER}},
         "the admission request has no resource (group, version, resource)"),
        ({"request": {"uid": "1", "resource": PODS, "object": POD, "userInfo": "sue"}},
         "the admission request's userInfo is not an object"),
        ({"request": {"uid": "1", "resource": PODS, "object": "p", "userInfo": USER}},
         "the admission request's object is not an object with a metadata object"),
        ({"request": {"uid": "1", "resource": PODS, "object": POD, "userInfo": USER,
                      "oldObject": {"metadata": "p"}}},
         "the admission request's oldObject is not an object with a metadata object"),
        ({"request": {"uid": "1", "resource": PODS, "object": POD}},
         "User info is missing from the admission request."),
        ({"request": {"uid": "1", "resource": PODS, "userInfo": USER}},
         "Either old or new object is missing from the admission request."),
    ],
)  # fmt: skip
async def test_a_malformed_review_is_a_bad_request_with_the_reason(
    synced: ControllerState,
    make_settings: Callable[..., Settings],
    review: object,
    reason: str,
) -> None:
    """Not a 500 with a traceback in the log: the API server would say the webhook failed."""
    with reserved_port() as port:
        settings = make_settings(
            webhook_port=port, webhook_address="127.0.0.1", webhook_host="127.0.0.1"
        )
        async with serving(make_registry(synced, settings), settings) as served:
            await served.review(VALIDATE_POD, POD_RESOURCE, operation="CREATE", object=POD)
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    f"https://127.0.0.1:{port}/{MUTATE_POD}", json=review, ssl=context
                ) as reply,
            ):
                assert (reply.status, await reply.text()) == (400, f"400: {reason}")
