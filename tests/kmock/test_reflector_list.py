"""kube.reflector: the list from the API server's watch cache, and its fall-back to paged lists.

Rules: a list is asked of the watch cache first (``resourceVersion`` ``0`` at start-up, else the
latest version seen; no ``limit``), its answer read as a stream; when the answer is not one whole
list (a ``Status`` answer, a page, a stream cut or stalled) or the cache cannot serve the version
(410, 504 "too large resource version"), the list is read in pages (``limit`` + ``continue``),
and memory is then exactly what the paged list returned; with ``list_from_cache`` off, only the
paged list is used. (A 429 or 5xx from the cache is asked of the cache again after a wait:
``test_reflector_retries``.)

The server here is a small aiohttp application rather than KMock: the faults are in the body of
one response (cut in the middle, stalled), below what KMock's reactions can express.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from memory_sink import MemorySink

from elasticquota.kube.readerparts import Kind
from elasticquota.kube.reflector import Reflector

PODS = Kind("pods", "/api/v1/pods")
PART = 1 << 16
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"}, "spec": {}}


def pod_list(names: list[str], version: str = "10", token: str = "") -> bytes:
    meta = {"resourceVersion": version, **({"continue": token} if token else {})}
    return orjson.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": [pod(n) for n in names]}
    )


class FakeServer:
    """Answers the list from the cache with ``cached`` and the paged list with two pages of the
    pods in ``paged``; records every request's query."""

    def __init__(self, cached: Handler) -> None:
        self.cached = cached
        self.paged = ["a", "b", "c"]
        self.requests: list[dict[str, str]] = []
        self.encodings: list[str] = []
        self.watch: Handler | None = None
        #: Answers the paged lists instead of ``paged``'s pods, when set.
        self.pages: Handler | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.requests.append(query)
        self.encodings.append(request.headers.get("Accept-Encoding", ""))
        if query.get("watch") == "true":
            if self.watch is not None:
                return await self.watch(request)
            await asyncio.sleep(3600)
        if "limit" not in query:
            return await self.cached(request)
        if self.pages is not None:
            return await self.pages(request)
        if "continue" not in query:
            return web.Response(
                body=pod_list(self.paged[:2], token="next"), content_type="application/json"
            )
        return web.Response(body=pod_list(self.paged[2:]), content_type="application/json")

    def kinds(self) -> list[str]:
        """What each list request was: "cache" or "pages"."""
        return [
            "pages" if "limit" in query else "cache"
            for query in self.requests
            if query.get("watch") != "true"
        ]


@contextlib.asynccontextmanager
async def serving(server: FakeServer) -> AsyncIterator[client.ApiClient]:
    app = web.Application()
    app.router.add_get("/api/v1/pods", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    api = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
    try:
        yield api
    finally:
        await api.close()
        await runner.cleanup()


def answer(body: bytes, status: int = 200) -> Handler:
    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(body=body, status=status, content_type="application/json")

    return handler


def streamed(parts: list[bytes], then: str) -> Handler:
    """A chunked answer of ``parts``; then the connection is cut ("cut") or goes silent."""

    async def handler(request: web.Request) -> web.StreamResponse:
        reply = web.StreamResponse(headers={"Content-Type": "application/json"})
        reply.enable_chunked_encoding()
        await reply.prepare(request)
        for part in parts:
            await reply.write(part)
        if then == "cut":
            assert request.transport is not None
            request.transport.close()
        else:
            await asyncio.sleep(3600)
        return reply

    return handler


async def list_once(
    server: FakeServer, sink: MemorySink, *, within: float = 10, **options: Any
) -> Reflector:
    """A reader into ``sink``, made with ``options``, after one list from ``server``, which must
    end within ``within`` seconds at the list's version, 10."""
    async with serving(server) as api:
        reader = Reflector(api, PODS, sink, **options)
        try:
            version = await asyncio.wait_for(reader._relist(), timeout=within)
        finally:
            await reader.close()
    assert version == "10"
    return reader


async def relist(server: FakeServer, **options: Any) -> tuple[Reflector, MemorySink]:
    """One list from ``server`` into memory that holds a pod, its requests bounded at 1 s."""
    sink = MemorySink()
    sink.objects[("ns", "ghost")] = pod("ghost")  # held from before: gone from the cluster
    reader = await list_once(server, sink, request_timeout=1.0, **options)
    return reader, sink


async def test_the_list_comes_from_the_cache_in_one_streamed_request() -> None:
    server = FakeServer(answer(pod_list(["x", "y", "z"])))
    reader, sink = await relist(server)
    assert server.kinds() == ["cache"]
    assert server.requests[0] == {"resourceVersion": "0"}
    assert server.encodings[0] == "gzip"  # drained at once, a tenth of the bytes held
    assert sink.names("ns") == {"x", "y", "z"}
    assert sink.relists == [{("ns", "x"), ("ns", "y"), ("ns", "z")}]
    assert reader.health.list_source == "cache"


async def test_without_list_from_cache_only_pages_are_asked() -> None:
    server = FakeServer(answer(pod_list(["x"])))
    reader, sink = await relist(server, list_from_cache=False)
    assert server.kinds() == ["pages", "pages"]
    assert sink.names("ns") == {"a", "b", "c"}
    assert reader.health.list_source == "pages"


TOO_LARGE = (
    b'{"kind":"Status","code":504,"reason":"Timeout","message":"Too large resource version: 20,'
    b' current: 10","details":{"causes":[{"reason":"ResourceVersionTooLarge"}]}}'
)
FAULTS: dict[str, Handler] = {
    "410 Gone": answer(b'{"kind":"Status","code":410,"reason":"Expired"}', status=410),
    "a too large resourceVersion": answer(TOO_LARGE, status=504),
    "a Status answer": answer(b'{"kind":"Status","apiVersion":"v1","status":"Failure"}'),
    "a page, not the whole list": answer(pod_list(["x"], token="more")),
    "a stream cut": streamed([pod_list(["x", "y", "z"])[:150]], then="cut"),
    "a stream cut between items": streamed([pod_list(["x", "y", "z"])[:-2]], then="cut"),
    "a stalled stream": streamed([pod_list(["x", "y", "z"])[:150]], then="stall"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_failed_list_from_the_cache_falls_back_to_pages(fault: str) -> None:
    server = FakeServer(FAULTS[fault])
    reader, sink = await relist(server)
    assert server.kinds() == ["cache", "pages", "pages"]
    # memory is the paged list's: what the broken stream handed over before it broke is gone
    assert sink.names("ns") == {"a", "b", "c"}
    assert sink.relists == [{("ns", "a"), ("ns", "b"), ("ns", "c")}]
    assert reader.health.list_source == "pages"


async def test_a_relist_after_410_asks_the_cache_for_the_latest_version_seen() -> None:
    """Not older than what memory already holds: a relist never takes memory back in time."""

    async def watch(request: web.Request) -> web.StreamResponse:
        reply = web.StreamResponse(headers={"Content-Type": "application/json"})
        await reply.prepare(request)
        modified = {
            "type": "MODIFIED",
            "object": {**pod("x"), "metadata": {**pod("x")["metadata"], "resourceVersion": "42"}},
        }
        gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}
        await reply.write(orjson.dumps(modified) + b"\n" + orjson.dumps(gone) + b"\n")
        await asyncio.sleep(3600)
        return reply

    server = FakeServer(answer(pod_list(["x"])))
    server.watch = watch
    sink = MemorySink()
    async with serving(server) as api:
        reader = Reflector(api, PODS, sink, request_timeout=1.0)
        task = asyncio.create_task(reader.run())
        try:
            for _ in range(200):
                if reader.health.relists >= 2:
                    break
                await asyncio.sleep(0.02)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    lists = [query for query in server.requests if query.get("watch") != "true"]
    assert [query.get("resourceVersion") for query in lists[:2]] == ["0", "42"]
    assert reader.health.relists >= 2


def ended_at_the_request_timeout(body: bytes, bound: float) -> Handler:
    """As the API server (1.20) answers a list: the whole answer written (gzipped when the client
    accepts it), and the connection closed ``bound`` seconds after the request arrived if the
    writes are not done by then (its ``--request-timeout``), however far the client has read."""

    async def handler(request: web.Request) -> web.StreamResponse:
        arrived = asyncio.get_running_loop().time()
        packed = "gzip" in request.headers.get("Accept-Encoding", "")
        headers = {"Content-Type": "application/json"}
        if packed:
            body_out, headers["Content-Encoding"] = gzip.compress(body, 1), "gzip"
        else:
            body_out = body
        reply = web.StreamResponse(headers=headers)
        reply.enable_chunked_encoding()
        await reply.prepare(request)
        try:
            async with asyncio.timeout_at(arrived + bound):
                for start in range(0, len(body_out), PART):
                    await reply.write(body_out[start : start + PART])
                await reply.write_eof()
        except TimeoutError:
            assert request.transport is not None
            request.transport.close()
        return reply

    return handler


class SlowSink(MemorySink):
    """Memory whose intake of a pod takes ``seconds`` (the operator's parse, on a busy machine)."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def upsert(self, body: dict[str, Any]) -> None:
        time.sleep(self.seconds)
        super().upsert(body)


async def test_a_list_parsed_slower_than_the_servers_bound_still_comes_from_the_cache() -> None:
    """40 MB of pods, parsed in ~2 s, from a server that ends the request after 1 s: the answer is
    read off the connection as it comes (gzipped), not at the pace of its parse, so the server is
    done in time and the list is the cache's, whole."""
    names = [f"p{index:05d}" for index in range(8000)]
    padding = "x" * 5000
    items = [{**pod(name), "spec": {"padding": padding}} for name in names]
    meta = {"resourceVersion": "10"}
    body = orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})
    server = FakeServer(ended_at_the_request_timeout(body, bound=1.0))
    sink = SlowSink(seconds=0.00025)
    reader = await list_once(server, sink, within=30, request_timeout=5.0)
    assert server.kinds() == ["cache"]
    assert reader.health.list_source == "cache"
    assert sink.names("ns") == set(names)


async def test_an_api_server_that_keeps_failing_is_said_once_not_at_every_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every list fails (the cache's answer is no list, the pages are refused): the fall-back is
    said at INFO the first time, the outage once at WARNING (as "cannot list": no watch was lost,
    none had started); the retries, after their waits, say nothing more."""
    server = FakeServer(FAULTS["a Status answer"])
    server.pages = answer(b'{"kind":"Status","code":500}', status=500)
    caplog.set_level("DEBUG", logger="elasticquota.kube.reflector")

    async def instantly(_: float) -> None:
        await asyncio.sleep(0)

    async with serving(server) as api:
        reader = Reflector(api, PODS, MemorySink(), request_timeout=1.0, sleep=instantly)
        task = asyncio.create_task(reader.run())
        try:
            while sum("listing in pages" in r.message for r in caplog.records) < 3:
                await asyncio.sleep(0.1)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    fallbacks = [r.levelname for r in caplog.records if "listing in pages" in r.message]
    outages = [(r.levelname, r.message) for r in caplog.records if r.levelname == "WARNING"]
    assert fallbacks[:3] == ["INFO", "DEBUG", "DEBUG"]
    cause = 'HTTP 500: {"kind":"Status","code":500}'
    assert outages == [("WARNING", f"pods: cannot list ({cause}); trying again")]
