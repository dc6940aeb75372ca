"""The operator's API client: keepalive sockets, and a fresh pool after a request timed out.

A plain local aiohttp server stands in for the API server here (KMock cannot hang a request).

Rules (kube/client.py): every connection of the observed client is opened through
``keepalive_socket`` (SO_KEEPALIVE, first probe after ``KEEPALIVE_IDLE`` s); a request that times
out retires the pool, once for all the requests that hung on it, and the retired pool is closed
with the client at the latest.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohappyeyeballs import AddrInfoType
from aiohttp import web
from kubernetes_asyncio import client

from elasticquota.kube import client as kube_client
from elasticquota.kube.client import KEEPALIVE_IDLE, ObservedApiClient, keepalive_socket


def test_keepalive_socket_has_keepalive_on() -> None:
    info: AddrInfoType = (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("", 0))
    with keepalive_socket(info) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """``/api/v1/namespaces``: answers at once, unless ``hang`` is set (then not before the
    server stops)."""
    hang, stopping = asyncio.Event(), asyncio.Event()

    async def namespaces(_: web.Request) -> web.Response:
        if hang.is_set():
            await stopping.wait()
        return web.json_response({"kind": "NamespaceList", "items": [], "metadata": {}})

    app = web.Application()
    app.router.add_get("/api/v1/namespaces", namespaces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", hang
    stopping.set()
    await runner.cleanup()


async def test_connections_are_opened_with_keepalive(
    server: tuple[str, asyncio.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[socket.socket] = []

    def spy(info: AddrInfoType) -> socket.socket:
        opened.append(keepalive_socket(info))
        return opened[-1]

    monkeypatch.setattr(kube_client, "keepalive_socket", spy)
    async with ObservedApiClient(client.Configuration(host=server[0]), lambda *_: None) as api:
        await client.CoreV1Api(api).list_namespace()
        assert len(opened) == 1
        assert opened[0].getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1


async def test_requests_that_time_out_retire_their_pool_once(
    server: tuple[str, asyncio.Event],
) -> None:
    url, hang = server
    failures: list[tuple[str, str]] = []
    configuration = client.Configuration(host=url)
    async with ObservedApiClient(configuration, lambda *f: failures.append(f), 0.2) as api:
        core = client.CoreV1Api(api)
        await core.list_namespace()
        first = api.rest_client.pool_manager
        hang.set()
        outcomes = await asyncio.gather(
            core.list_namespace(), core.list_namespace(), return_exceptions=True
        )
        assert all(isinstance(outcome, TimeoutError) for outcome in outcomes)
        second = api.rest_client.pool_manager
        assert second is not first  # new requests open fresh connections
        hang.clear()
        await core.list_namespace()
        assert api.rest_client.pool_manager is second  # one renewal for both hung requests
    assert first.closed and second.closed
    assert failures == [("list", "timeout"), ("list", "timeout")]
