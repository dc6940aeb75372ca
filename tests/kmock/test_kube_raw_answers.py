"""Answers read raw (``_preload_content=False``: evictions, gate releases, the pod read before an
eviction) are bounded by the request timeout of the operator's client, body included.

Rules (kube/client.py): the whole answer of a request, headers and body, comes within the
client's ``request_timeout`` (``API_TIMEOUT``); an answer whose body stops coming is abandoned at
that bound like any other request (``timeout``, the pool retired), and ``with_retries`` retries
it. Before, a raw answer was bounded until its headers only: its body, read by
``kube.errors.raise_for_status`` or ``read_json``, waited for the 30 s of one attempt of
``with_retries``, three times over.

KMock sends the status and the first chunk of the body, then nothing more (a connection that
stopped carrying traffic mid-answer); each call must end well before those 30 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import kmock
import pytest
from kubernetes_asyncio import client
from lease_election import REAL_SLEEP

from elasticquota.kube.evictions import EvictionError, EvictionOutcome, Evictor
from elasticquota.kube.pods import set_scheduling_gates

T = TypeVar("T")
Seen = list[tuple[str, str]]
CREATED = "2026-11-27T10:00:00Z"
#: The request timeout of the client here, and how long a call may take at most in these tests
#: (far below the 30 s of one attempt: a call bounded by those does not end in time).
REQUEST_TIMEOUT = 0.2
WITHIN = 10.0


def stall(view: Any, code: int) -> None:
    """Answer the requests of the KMock ``view`` with status ``code`` and a body that stops after
    its first bytes."""
    view << code << (b'{"kind": ', lambda: REAL_SLEEP(60))


@pytest.fixture
def request_timeout() -> float:
    """The bound of the ``observed`` client's requests here."""
    return REQUEST_TIMEOUT


async def bounded(call: Awaitable[T]) -> T:
    return await asyncio.wait_for(call, WITHIN)


async def test_an_eviction_refused_with_a_stalled_body_is_retried_at_the_timeout(
    kmock: kmock.KubernetesEmulator, observed: client.ApiClient, seen: Seen
) -> None:
    stall(kmock["post"][:1], 429)
    assert (await bounded(Evictor(observed).evict("team", "p"))).outcome is EvictionOutcome.EVICTED
    assert seen == [("evict", "timeout")]
    assert len(kmock) == 2


async def test_a_pod_read_with_a_stalled_body_is_retried_at_the_timeout(
    kmock: kmock.KubernetesEmulator, observed: client.ApiClient
) -> None:
    """The read before an eviction of the pod created at ``CREATED`` (a 200 read as JSON)."""
    pod = {
        "metadata": {"name": "p", "namespace": "team", "uid": "u1", "creationTimestamp": CREATED}
    }
    kmock.objects["v1/pods", "team", "p"] = pod
    stall(kmock["get"][:1], 200)
    result = await bounded(Evictor(observed).evict("team", "p", CREATED))
    assert result.outcome is EvictionOutcome.EVICTED
    assert [request.method for request in kmock] == [kmock.method.GET] * 2 + [kmock.method.POST]


async def test_a_gate_release_refused_with_a_stalled_body_is_retried_at_the_timeout(
    kmock: kmock.KubernetesEmulator, observed: client.ApiClient, seen: Seen
) -> None:
    pod = {"metadata": {"name": "p", "namespace": "team"}, "spec": {"schedulingGates": []}}
    kmock.objects["v1/pods", "team", "p"] = pod
    stall(kmock["patch"][:1], 500)
    assert await bounded(set_scheduling_gates(observed, "team", "p", [])) is True
    assert seen == [("patch", "timeout")]


async def test_a_stalled_body_that_lasts_is_reported_as_the_other_timeouts(
    kmock: kmock.KubernetesEmulator, observed: client.ApiClient, seen: Seen
) -> None:
    """Every attempt hangs: the call ends with the ``TimeoutError`` of its last attempt (the
    cause of the eviction's failure), as a preloaded call does (the caller logs it and tries
    again at its next round)."""
    stall(kmock["post"], 503)
    with pytest.raises(EvictionError) as raised:
        await bounded(Evictor(observed).evict("team", "p"))
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert seen == [("evict", "timeout")] * 3
