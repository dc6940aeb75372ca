"""kube.reflector against KMock: what a failure costs the API server, counted in its requests.

Rules (as client-go's reflector): a watch that fails (429, a 5xx, a dropped connection, an error
event) is resumed from the last resourceVersion seen, with no list: the resumed watch replays
what happened since. A 429 or 5xx on the list from the watch cache asks the cache again rather
than the paged list from etcd. Failures in a row wait longer and longer (``kube.backoff``: doubling
from 1 s, less up to a quarter at random, up to 10 s); a watch that delivered events starts the
waits over. A 410 relists at once the first time after a long watch and waits when it comes again;
a 410 on a page's ``continue`` token is followed by one list without paging (neither ``limit`` nor
``resourceVersion``), not by the first page again. A watch event too long to read is read by a
list, after a wait, since every watch resumed before it would meet it again.

The reader's waits are not slept: ``Time`` records each with the number of requests KMock had
received by then, and is the reader's clock too (a watch is long when a reaction moves it on).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import kmock
import orjson
import pytest
from kubernetes_asyncio import client
from lease_election import REAL_SLEEP, StatusBody
from memory_sink import MemorySink

from elasticquota.kube.backoff import FIRST_DELAY, JITTER
from elasticquota.kube.readerparts import Kind
from elasticquota.kube.reflector import Reflector

PODS = Kind("pods", "/api/v1/pods")
#: Sets a failure up as the answer of a view of the server's requests (e.g. the first 3 watches).
Failure = Callable[[kmock.View, StatusBody], object]


def pod(name: str, version: str = "5") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version}}


def pod_list(names: list[str], version: str = "10", token: str = "") -> bytes:
    """A list as the API server encodes it: compact JSON (which the streamed parse relies on;
    KMock's own JSON has spaces after its commas)."""
    meta = {"resourceVersion": version, **({"continue": token} if token else {})}
    items = [pod(name) for name in names]
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items})


def drop(request: kmock.Request) -> bytes:
    """Close the connection without an answer (an answer of nothing, so that KMock keeps the
    reaction on). aiohttp sends a GET whose connection was dropped again once by itself: each
    drop the reader sees is two requests."""
    raw = request._raw_request
    assert raw is not None and raw.transport is not None
    raw.transport.close()
    return b""


#: Requests a failure takes: two for a dropped connection (aiohttp's own retry), else one.
SENT = {"a dropped connection": 2}


def refusal(code: int, reason: str) -> Failure:
    return lambda view, status: view << code << status(code, reason)


def paged(request: kmock.Request) -> bool:
    return "limit" in request.params and "continue" not in request.params


def continued(request: kmock.Request) -> bool:
    return "continue" in request.params


def asked(server: kmock.KubernetesEmulator) -> list[str]:
    """Each request, in order: ``cache@<version>``, ``page``, ``page+continue``, ``whole`` (a list
    with neither ``limit`` nor ``resourceVersion``) or ``watch@<version>``."""
    words = []
    for request in server:
        params = request.params
        if params.get("watch") == "true":
            words.append(f"watch@{params.get('resourceVersion')}")
        elif "limit" in params:
            words.append("page+continue" if "continue" in params else "page")
        elif "resourceVersion" in params:
            words.append(f"cache@{params['resourceVersion']}")
        else:
            words.append("whole")
    return words


class Time:
    """The reader's clock and its sleep: a wait is recorded (with the number of requests the
    server had received) and moves the clock on at once; the ``park``-th wait never ends, so that
    the test stops the reader there."""

    def __init__(self, server: kmock.KubernetesEmulator, park: int = 0) -> None:
        self._server = server
        self._park = park
        self.now = 1000.0
        self.waits: list[tuple[int, float]] = []
        self.parked = asyncio.Event()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.waits.append((len(self._server), delay))
        self.now += delay
        if len(self.waits) == self._park:
            self.parked.set()
            await asyncio.Event().wait()
        await REAL_SLEEP(0)

    def reader(self, api: client.ApiClient, sink: MemorySink, **options: Any) -> Reflector:
        return Reflector(
            api, PODS, sink, clock=self.monotonic, sleep=self.sleep, request_timeout=5, **options
        )


async def run_until(reader: Reflector, done: Callable[[], bool]) -> None:
    """Run ``reader`` until ``done()`` (polled; at most 5 s, then the test's asserts say what
    happened instead), then stop it."""
    task = asyncio.create_task(reader.run())
    try:
        for _ in range(500):
            if done() or task.done():
                break
            await REAL_SLEEP(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def doubling(waits: list[tuple[int, float]], at: list[int], bases: list[float]) -> bool:
    """The waits came after ``at`` requests and each is its base (in ``FIRST_DELAY``s) less up to
    ``JITTER`` of it."""
    delays = [FIRST_DELAY * base for base in bases]
    return [count for count, _ in waits] == at and all(
        delay * (1 - JITTER) <= waited <= delay
        for (_, waited), delay in zip(waits, delays, strict=True)
    )


WATCH_FAILURES: dict[str, Failure] = {
    "429": refusal(429, "TooManyRequests"),
    "500": refusal(500, "InternalError"),
    "503": refusal(503, "ServiceUnavailable"),
    "a dropped connection": lambda view, _: view << drop,
    "an error event": lambda view, status: (
        view << ({"type": "ERROR", "object": status(500, "InternalError")},)
    ),
}


@pytest.mark.parametrize("failure", list(WATCH_FAILURES))
async def test_a_failed_watch_is_resumed_from_its_version_without_a_list_after_growing_waits(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody, failure: str
) -> None:
    sent = SENT.get(failure, 1)
    kmock["list"] << pod_list(["a"])
    WATCH_FAILURES[failure](kmock["watch"][: 3 * sent], k8s_status)
    time = Time(kmock)
    reader = time.reader(api, MemorySink())
    await run_until(reader, lambda: len(kmock) == 2 + 3 * sent and reader.health.connected)

    assert asked(kmock) == ["cache@0"] + ["watch@10"] * (1 + 3 * sent)
    at = [1 + sent, 1 + 2 * sent, 1 + 3 * sent]
    assert doubling(time.waits, at=at, bases=[1, 2, 4]), time.waits
    assert reader.health.relists == 1


async def test_a_watch_cut_after_an_event_resumes_from_it_and_the_waits_start_over(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """Two refused watches (waits of 1 and 2 s), then one that delivers a change and breaks: the
    next watch asks for what came after that change, one second later."""
    kmock["list"] << pod_list(["a"])
    kmock["watch"][:2] << 429 << k8s_status(429, "TooManyRequests")
    changed = {"type": "MODIFIED", "object": {**pod("a", "12"), "spec": {"seen": True}}}
    broken = {"type": "ERROR", "object": k8s_status(500, "InternalError")}
    kmock["watch"][2:3] << (changed, broken)
    time = Time(kmock)
    sink = MemorySink()
    reader = time.reader(api, sink)
    await run_until(reader, lambda: len(kmock) == 5 and reader.health.connected)

    assert asked(kmock) == ["cache@0", "watch@10", "watch@10", "watch@10", "watch@12"]
    assert doubling(time.waits, at=[2, 3, 4], bases=[1, 2, 1]), time.waits
    assert sink.objects[("ns", "a")]["spec"] == {"seen": True}
    assert reader.health.relists == 1


async def test_a_watch_the_server_ends_at_once_without_an_event_is_retried_after_waits(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock["list"] << pod_list(["a"])
    kmock["watch"][:3] << b""
    time = Time(kmock)
    reader = time.reader(api, MemorySink())
    await run_until(reader, lambda: len(kmock) == 5 and reader.health.connected)

    assert asked(kmock) == ["cache@0"] + ["watch@10"] * 4, (asked(kmock), time.waits)
    assert doubling(time.waits, at=[2, 3, 4], bases=[1, 2, 4]), time.waits


async def test_a_watch_given_up_at_its_bound_is_resumed_at_once_from_its_version(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """A watch whose answer never comes (a silently dropped connection) is given up at the
    client's bound and resumed at once: the bound was its wait."""
    kmock["list"] << pod_list(["a"])
    kmock["watch"] << (lambda: REAL_SLEEP(30))
    time = Time(kmock)
    reader = time.reader(api, MemorySink(), server_timeout=0.5, client_margin=0.1)
    await run_until(reader, lambda: len(kmock) >= 4)

    assert asked(kmock)[:4] == ["cache@0"] + ["watch@10"] * 3
    assert time.waits == []
    assert reader.health.relists == 1


LIST_FAILURES: dict[str, Failure] = {
    "429": refusal(429, "TooManyRequests"),
    "503": refusal(503, "ServiceUnavailable"),
    "a dropped connection": lambda view, _: view << drop,
}


@pytest.mark.parametrize("failure", list(LIST_FAILURES))
async def test_a_refused_list_from_the_cache_is_asked_of_the_cache_again_not_in_pages(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody, failure: str
) -> None:
    sent = SENT.get(failure, 1)
    LIST_FAILURES[failure](kmock["list"][: 3 * sent], k8s_status)
    kmock["list"] << pod_list(["a", "b"])
    time = Time(kmock)
    sink = MemorySink(held={("ns", "ghost")})
    reader = time.reader(api, sink)
    await run_until(reader, lambda: len(kmock) == 2 + 3 * sent and reader.health.connected)

    assert asked(kmock) == ["cache@0"] * (1 + 3 * sent) + ["watch@10"]
    assert doubling(time.waits, at=[sent, 2 * sent, 3 * sent], bases=[1, 2, 4]), time.waits
    assert sink.names("ns") == {"a", "b"}
    assert reader.health.list_source == "cache"


async def test_an_expired_continue_token_is_followed_by_one_list_without_paging(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """The list took longer than etcd's compaction window: it is read again in one request, not
    from its first page (which would expire again); memory is what that list returned."""
    kmock["list"][continued] << 410 << k8s_status(410, "Expired")
    kmock["list"][paged] << pod_list(["a", "b"], token="next")
    kmock["list"] << pod_list(["b", "c"], version="11")
    time = Time(kmock)
    sink = MemorySink(held={("ns", "ghost")})
    reader = time.reader(api, sink, list_from_cache=False, page_size=2)
    await run_until(reader, lambda: len(kmock) == 4 and reader.health.connected)

    assert asked(kmock) == ["page", "page+continue", "whole", "watch@11"]
    assert sink.names("ns") == {"b", "c"}
    assert sink.relists == [{("ns", "b"), ("ns", "c")}]
    assert reader.health.list_source == "whole"
    assert time.waits == []


async def test_a_410_on_every_list_relists_after_growing_waits(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """The cache, the continue token and the list in one request all answer 410: every relist is
    four requests, the first repeated at once, the next ones after waits of 1, 2, 4 s."""
    kmock["list"][paged] << pod_list(["a", "b"], token="next")
    kmock["list"] << 410 << k8s_status(410, "Expired")
    time = Time(kmock, park=3)
    reader = time.reader(api, MemorySink())
    await run_until(reader, time.parked.is_set)

    assert asked(kmock) == ["cache@0", "page", "page+continue", "whole"] * 4
    assert doubling(time.waits, at=[8, 12, 16], bases=[1, 2, 4]), time.waits
    assert reader.health.relists == 0


async def test_410s_that_come_again_wait_and_the_first_after_a_long_watch_relists_at_once(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every watch is answered 410, but the third after a minute open: the first 410 relists at
    once, the second after 1 s; the long watch's relists at once again, and starts the waits over
    (1 s, then 2 s). A routine 410 is an INFO; one that comes again is an outage (one WARNING)."""
    caplog.set_level("INFO", logger="elasticquota.kube.reflector")
    time = Time(kmock, park=3)
    expired = {"type": "ERROR", "object": k8s_status(410, "Expired")}

    def a_minute_later() -> None:
        time.now += 60

    kmock["list"] << pod_list(["a"])
    kmock["watch"][2:3] << (a_minute_later, expired)
    kmock["watch"] << 410 << k8s_status(410, "Expired")
    reader = time.reader(api, MemorySink())
    await run_until(reader, time.parked.is_set)

    assert asked(kmock) == ["cache@0"] + ["watch@10", "cache@10"] * 4 + ["watch@10"]
    assert doubling(time.waits, at=[4, 8, 10], bases=[1, 1, 2]), time.waits
    assert reader.health.relists == 5
    said = [r.levelname for r in caplog.records if "expired" in r.getMessage()]
    assert said == ["INFO", "WARNING", "INFO", "WARNING"]


async def test_a_watch_event_too_long_to_read_is_read_by_a_list_after_a_wait(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """The second pod's ADDED event is longer than the reader's bound: resumed from version 10,
    the watch would meet it every time; the reader lists (from the cache, at least as recent as
    what it saw) and watches on from that list."""
    big = {**pod("big", "15"), "spec": {"note": "x" * 5000}}
    kmock["list"][:1] << pod_list(["a"])
    kmock["list"] << orjson.dumps(
        {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "20"},
         "items": [pod("a"), big]}
    )  # fmt: skip
    kmock["watch"][:1] << ({"type": "ADDED", "object": big},)
    time = Time(kmock)
    sink = MemorySink()
    reader = time.reader(api, sink, watch_line_limit=2000)
    await run_until(reader, lambda: len(kmock) == 4 and reader.health.connected)

    assert asked(kmock) == ["cache@0", "watch@10", "cache@10", "watch@20"]
    assert sink.names("ns") == {"a", "big"}
    assert doubling(time.waits, at=[2], bases=[1]), time.waits
    assert reader.health.relists == 2
