"""kube.reflector.Reflector against the real API server: list (from the watch cache, or in pages),
watch, relist level-based.

Rules: every object of the kind reaches the sink, from the watch cache or page after page; after a
complete list the sink is told exactly which objects exist, so what it holds beyond them (objects
deleted while no watch ran, or while a watch expired) is dropped; changes and deletions arrive
through the watch; a watch the server ends (its ``timeoutSeconds``) is resumed from the last
version without a new list and without losing the changes made in between; the reader's health
says when it is connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import pytest
from harness import ensure_namespace, eventually, pod_manifest, pods_of
from kubernetes_asyncio import client
from memory_sink import MemorySink

from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.readerparts import VersionExpiredError
from elasticquota.kube.reflector import Reflector


@pytest.fixture
async def namespace(api: client.ApiClient) -> str:
    name = f"reflector-{uuid.uuid4().hex[:6]}"
    await ensure_namespace(api, name)
    return name


@contextlib.asynccontextmanager
async def running(reader: Reflector) -> AsyncIterator[Reflector]:
    task = asyncio.create_task(reader.run())
    try:
        yield reader
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.timeout(120)
@pytest.mark.parametrize("from_cache", [False, True], ids=["paged", "from-cache"])
async def test_a_list_delivers_every_object_and_drops_the_ghosts(
    api: client.ApiClient, namespace: str, from_cache: bool
) -> None:
    for index in range(23):
        await apply_manifest(api, pod_manifest(namespace, f"p-{index:02d}", "10m"))
    ghost = (namespace, "deleted-while-nobody-watched")
    sink = MemorySink(held={ghost})

    reader = Reflector(api, pods_of(namespace), sink, page_size=5, list_from_cache=from_cache)
    async with running(reader):
        await asyncio.wait_for(reader.health.listed.wait(), 30)

    assert sink.names(namespace) == {f"p-{index:02d}" for index in range(23)}
    assert ghost not in sink.objects
    assert sink.relists == [set(sink.objects)]
    assert reader.health.list_source == ("cache" if from_cache else "pages")


@pytest.mark.timeout(120)
async def test_a_relist_from_the_cache_after_the_watch_expired_drops_what_was_deleted(
    api: client.ApiClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The reader stops after its list; pods are deleted and created meanwhile; when it resumes,
    its watch is answered ``410 Gone`` (simulated: the API server's watch cache keeps every event
    of the last 75 s, so a real expiry takes longer than a test) and it lists again, from the
    watch cache of the real API server: memory becomes the cluster, the deleted pods gone."""
    for index in range(6):
        await apply_manifest(api, pod_manifest(namespace, f"p-{index}", "10m"))
    sink = MemorySink()
    reader = Reflector(api, pods_of(namespace), sink)
    async with running(reader):
        await asyncio.wait_for(reader.health.listed.wait(), 30)
        await eventually(lambda: reader.health.connected)
    assert len(sink.names(namespace)) == 6

    core = client.CoreV1Api(api)
    for index in range(3):
        await core.delete_namespaced_pod(f"p-{index}", namespace, grace_period_seconds=0)
    await apply_manifest(api, pod_manifest(namespace, "born-meanwhile", "10m"))
    watch, watches = reader._watch, []

    async def expired_first() -> None:
        watches.append(reader._version)
        if len(watches) == 1:
            raise VersionExpiredError("too old resource version")
        await watch()

    reader._watch = expired_first  # type: ignore[method-assign]
    caplog.set_level("INFO", logger="elasticquota.kube.reflector")
    async with running(reader):
        await eventually(lambda: reader.health.relists == 2)
        await eventually(lambda: reader.health.connected)

    assert "resourceVersion expired" in caplog.text
    assert "listing in pages" not in caplog.text
    assert reader.health.list_source == "cache"
    assert sink.names(namespace) == {"p-3", "p-4", "p-5", "born-meanwhile"}
    assert sink.relists[-1] == set(sink.objects)
    assert int(watches[1] or 0) > int(watches[0] or 0)  # watching on from the new list


@pytest.mark.timeout(120)
async def test_changes_and_deletions_arrive_through_the_watch(
    api: client.ApiClient, namespace: str
) -> None:
    await apply_manifest(api, pod_manifest(namespace, "old", "10m"))
    sink = MemorySink()
    async with running(Reflector(api, pods_of(namespace), sink)) as reader:
        await asyncio.wait_for(reader.health.listed.wait(), 30)
        await eventually(lambda: reader.health.connected)

        await apply_manifest(api, pod_manifest(namespace, "new", "20m"))
        await client.CoreV1Api(api).patch_namespaced_pod(
            "old", namespace, {"metadata": {"labels": {"seen": "yes"}}}
        )
        await eventually(lambda: "new" in sink.names(namespace))
        await eventually(
            lambda: sink.objects[(namespace, "old")]["metadata"].get("labels") == {"seen": "yes"}
        )

        await client.CoreV1Api(api).delete_namespaced_pod("new", namespace, grace_period_seconds=0)
        await eventually(lambda: "new" not in sink.names(namespace))
        assert reader.health.relists == 1


@pytest.mark.timeout(120)
async def test_a_watch_the_server_ends_is_resumed_without_a_relist_or_a_lost_change(
    api: client.ApiClient, namespace: str
) -> None:
    sink = MemorySink()
    reader = Reflector(api, pods_of(namespace), sink, server_timeout=1.0, client_margin=5.0)
    async with running(reader):
        await asyncio.wait_for(reader.health.listed.wait(), 30)
        for index in range(4):  # each create lands in a different one-second watch
            await apply_manifest(api, pod_manifest(namespace, f"p-{index}", "10m"))
            await asyncio.sleep(1.3)
        await eventually(lambda: len(sink.names(namespace)) == 4)

    assert reader.health.relists == 1
    assert reader.health.connected
