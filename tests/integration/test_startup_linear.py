"""Start-up does work linear in the number of objects (a guard, not a timing).

With Kopf's index handlers every listed pod's worker waited behind a start-up barrier and every
pod that passed it woke all the others: 2x the pods cost 5x the time. The operator's own reader
hands each listed object to memory exactly once, in pages, yielding to the event loop between
slices. Here the same reader and the same memory (``ControllerState``) list 1,000 and then 4,000
pods from the real API server; the counts of what ran are compared: one handler invocation per
object and one complete list, whatever the count (Kopf's barrier woke every waiting worker per
object: its wake-ups grew with the square of the count).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from harness import ensure_namespace, pod_manifest
from kubernetes_asyncio import client

from elasticquota.controller.ingest import PODS, sinks
from elasticquota.controller.state import ControllerState, ObjectKey
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.readerparts import Kind
from elasticquota.kube.reflector import Reflector

CREATE_CONCURRENCY = 40


@dataclass
class Counts:
    upserts: int = 0
    relists: int = 0


class CountingSink:
    """The state's pod entry points, counted."""

    def __init__(self, state: ControllerState, counts: Counts) -> None:
        self._sink = sinks(state)[PODS]
        self._counts = counts

    def upsert(self, body: dict[str, Any]) -> None:
        self._counts.upserts += 1
        self._sink.upsert(body)

    def delete(self, body: dict[str, Any]) -> None:
        self._sink.delete(body)

    async def relisted(self, keys: set[ObjectKey]) -> None:
        self._counts.relists += 1
        await self._sink.relisted(keys)


async def create_pods(api: client.ApiClient, namespace: str, count: int) -> None:
    core = client.CoreV1Api(api)
    slots = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(index: int) -> None:
        async with slots:
            body = pod_manifest(namespace, f"p-{index:05d}", "10m")
            await core.create_namespaced_pod(namespace, body)

    await asyncio.gather(*(one(index) for index in range(count)))


async def start_up(
    api: client.ApiClient, namespace: str, size: int
) -> tuple[Counts, ControllerState]:
    """List the namespace's ``size`` pods into a fresh memory once; what ran, counted. The list
    comes from the API server's watch cache, which may trail the creates by a moment: the pods
    it did not have yet arrive by the watch that follows, each once, as the operator gets them."""
    counts = Counts()
    state = ControllerState.create(EngineSettings())
    kind = Kind("pods", f"/api/v1/namespaces/{namespace}/pods")
    reader = Reflector(api, kind, CountingSink(state, counts))
    task = asyncio.create_task(reader.run())
    try:
        await asyncio.wait_for(reader.health.listed.wait(), 120)
        async with asyncio.timeout(30):
            while len(state.engine.pods) < size:
                await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return counts, state


@pytest.mark.timeout(240)
async def test_listing_4x_the_pods_does_4x_the_work(api: client.ApiClient) -> None:
    measured: dict[int, Counts] = {}
    for size in (1000, 4000):
        namespace = f"linear-{size}-{uuid.uuid4().hex[:6]}"
        await ensure_namespace(api, namespace)
        await create_pods(api, namespace, size)
        counts, state = await start_up(api, namespace, size)
        assert len(state.engine.pods) == size
        measured[size] = counts

    small, large = measured[1000], measured[4000]
    assert (small.upserts, large.upserts) == (1000, 4000)  # one handler call per object
    assert (small.relists, large.relists) == (1, 1)
