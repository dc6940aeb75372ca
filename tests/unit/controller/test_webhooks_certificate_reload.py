"""A renewed certificate is served without the webhook port ever closing.

The certificate files (the operator's own from its Secret, cert-manager's from a mounted Secret)
are read again when they change. Kopf's server closes its listening socket, waits for the
requests in flight (up to a minute) and listens again: meanwhile the API server's connections are
refused, and a webhook with ``failurePolicy: Fail`` rejects the pods it is asked about. The
operator's server keeps listening and serves the new certificate from the next handshake on.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import aiohttp
import kopf
import pytest

from elasticquota.controller.webhooks import WebhookServer
from elasticquota.controller.webhooks.certs import (
    CA_CERT,
    TLS_CERT,
    TLS_KEY,
    make_authority,
    make_serving,
)

NOW = datetime.datetime.now(datetime.UTC)
#: What a review needs for the server to pass it on (``checking_reviews``).
REVIEW = {"request": {"uid": "u1", "resource": {"group": "", "version": "v1", "resource": "pods"}}}
ANSWER = {"response": {"uid": "u1", "allowed": True}}


def certificate(name: str) -> dict[str, bytes]:
    """A CA named ``name`` and a serving certificate for 127.0.0.1's name, signed by it."""
    authority = make_authority(name, 30, NOW)
    return {**make_serving(authority, ["localhost"], 30, NOW), **authority}


def write(directory: Path, data: dict[str, bytes]) -> tuple[Path, Path]:
    """The operator's files: certificate + key in one PEM, and the CA, each renamed into place."""
    pem, ca = directory / "tls.pem", directory / "ca.crt"
    for path, content in ((pem, data[TLS_CERT] + data[TLS_KEY]), (ca, data[CA_CERT])):
        path.with_suffix(".new").write_bytes(content)
        path.with_suffix(".new").replace(path)
    return pem, ca


def served_pem(port: int) -> str:
    """The certificate the port serves now (a new connection, no verification)."""
    return ssl.get_server_certificate(("127.0.0.1", port), timeout=5)


def der(pem: str | bytes) -> bytes:
    """A PEM certificate as DER, to compare."""
    return ssl.PEM_cert_to_DER_cert(pem if isinstance(pem, str) else pem.decode())


class Slow:
    """A webhook function that answers only when released, saying when a review has arrived."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.released = asyncio.Event()

    async def __call__(self, request: object, **details: object) -> object:
        self.arrived.set()
        await self.released.wait()
        return ANSWER


async def review(port: int) -> tuple[int, Any]:
    """One review POSTed over HTTPS (no verification), as the API server sends it."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"https://127.0.0.1:{port}/hook", json=REVIEW, ssl=context) as reply,
    ):
        return reply.status, await reply.json()


@pytest.fixture
async def configs(tmp_path: Path) -> AsyncIterator[Any]:
    """The server on files of the first certificate, its client configurations as they come."""
    first = certificate("first-ca")
    pem, ca = write(tmp_path, first)
    server = WebhookServer(
        addr="127.0.0.1", host="127.0.0.1", certfile=str(pem), pkeyfile=str(pem),
        cafile=str(ca), file_check_interval=0.05,
    )  # fmt: skip
    fn = Slow()
    async with server:
        generator = cast(AsyncGenerator[Any, None], server(cast(kopf.WebhookFn, fn)))
        try:
            yield generator, fn, first
        finally:
            await generator.aclose()


async def test_a_renewed_certificate_is_served_while_a_review_is_in_flight(
    configs: Any, tmp_path: Path
) -> None:
    generator, fn, data = configs
    first = await anext(generator)
    port = urlsplit(first["url"]).port
    assert der(await asyncio.to_thread(served_pem, port)) == der(data[TLS_CERT])
    in_flight = asyncio.create_task(review(port))
    await asyncio.wait_for(fn.arrived.wait(), 5)

    renewed = certificate("second-ca")
    write(tmp_path, renewed)
    # The configuration with the new CA comes while the first review still waits for its answer.
    second = await asyncio.wait_for(anext(generator), 5)
    assert second["url"] == first["url"]
    assert second["caBundle"] != first["caBundle"]
    assert der(await asyncio.to_thread(served_pem, port)) == der(renewed[TLS_CERT])
    assert not in_flight.done()
    fn.released.set()
    assert await asyncio.wait_for(in_flight, 5) == (200, ANSWER)


async def test_a_broken_renewal_keeps_the_certificate_served(configs: Any, tmp_path: Path) -> None:
    """Files half-replaced (a key that does not match the certificate) are not served; the
    previous certificate goes on until good files come."""
    generator, _, _ = configs
    first = await anext(generator)
    port = urlsplit(first["url"]).port
    before = await asyncio.to_thread(served_pem, port)
    good, other = certificate("good-ca"), certificate("other-ca")
    write(tmp_path, {**good, TLS_KEY: other[TLS_KEY]})
    pending = asyncio.ensure_future(anext(generator))
    await asyncio.sleep(0.3)  # several checks
    assert not pending.done()
    assert await asyncio.to_thread(served_pem, port) == before
    write(tmp_path, good)
    renewed = await asyncio.wait_for(pending, 5)
    assert renewed["url"] == first["url"]
    assert der(await asyncio.to_thread(served_pem, port)) == der(good[TLS_CERT])
