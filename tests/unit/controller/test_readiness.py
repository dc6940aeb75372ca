"""Readiness follows the readers: synced, and no kind's watch down for longer than the grace.

Rules (controller/state.py ``ready``/``blind``, controller/observability/health.py ``/readyz``, the
``elastic_quota_ready`` and ``elastic_quota_watch_*`` series): a replica is ready once every kind
was listed and while every reader is connected or has been disconnected for at most the grace
(5 s), so a reconnect that heals at once does not flap it; a watch still open after the server
should have ended it (a frozen connection) counts as down since the last bytes it carried;
``/readyz`` names the kinds it is blind to; liveness never depends on the readers.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from aiohttp.test_utils import TestClient, TestServer
from kubernetes_asyncio import client

from elasticquota.controller.ingest import Ingest
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.observability.health import health_app
from elasticquota.controller.state import READY_GRACE, ControllerState
from elasticquota.kube.readerparts import ReaderHealth

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


def connected() -> ReaderHealth:
    health = ReaderHealth()
    health.listed.set()
    health.up(time.monotonic())
    return health


def down_for(seconds: float) -> ReaderHealth:
    health = connected()
    health.down(time.monotonic() - seconds)
    return health


def test_ready_needs_the_listing_and_tolerates_a_short_reconnect(state: ControllerState) -> None:
    state.readers = {"pods": connected(), "nodes": down_for(1.0)}
    now = time.monotonic()
    assert not state.ready(now)  # not synced yet
    state.mark_synced()
    assert state.ready(now)
    assert state.blind(now) == []


def test_a_watch_down_beyond_the_grace_makes_the_replica_blind(state: ControllerState) -> None:
    state.mark_synced()
    state.readers = {"pods": down_for(READY_GRACE + 1), "nodes": connected()}
    assert state.blind(time.monotonic()) == ["pods"]
    assert not state.ready(time.monotonic())


async def test_readyz_names_the_blind_kinds_and_healthz_stays_live(
    state: ControllerState, leading: asyncio.Event
) -> None:
    state.mark_synced()
    state.readers = {"pods": down_for(60), "elasticquotas": connected()}
    async with TestClient(TestServer(health_app(state, leading))) as client:
        reply = await client.get("/readyz")
        assert reply.status == 503
        assert await reply.json() == {"ready": False, "active": True, "blind": ["pods"]}
        assert (await client.get("/healthz")).status == 200
        state.readers["pods"].up(time.monotonic())
        assert (await client.get("/readyz")).status == 200


async def test_the_watch_series_show_each_kind(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics
) -> None:
    state.mark_synced()
    state.readers = {"pods": down_for(30), "nodes": connected()}
    state.readers["pods"].relists = 3
    async with TestClient(TestServer(health_app(state, leading, metrics))) as client:
        text = await (await client.get("/metrics")).text()
    assert 'elastic_quota_watch_connected{kind="nodes"} 1.0' in text
    assert 'elastic_quota_watch_connected{kind="pods"} 0.0' in text
    assert 'elastic_quota_watch_relists_total{kind="pods"} 3.0' in text
    assert 29 < down_seconds(text, "pods") < 40
    assert "elastic_quota_ready 0.0" in text


def down_seconds(metrics_text: str, kind: str) -> float:
    """The ``elastic_quota_watch_down_seconds`` of ``kind`` in a scrape."""
    series = f'elastic_quota_watch_down_seconds{{kind="{kind}"}}'
    line = next(line for line in metrics_text.splitlines() if line.startswith(series))
    return float(line.split()[-1])


def frozen(silent_for: float, overdue_by: float) -> ReaderHealth:
    """A watch that carried its last bytes ``silent_for`` s ago and should have been ended by the
    server ``overdue_by`` s ago (negative: not yet)."""
    now = time.monotonic()
    health = ReaderHealth()
    health.listed.set()
    health.up(now - silent_for, stale_after=now - overdue_by)
    return health


def test_a_watch_open_past_its_end_is_blind_since_its_last_bytes(state: ControllerState) -> None:
    state.mark_synced()
    now = time.monotonic()
    state.readers = {"pods": frozen(30, overdue_by=1), "nodes": frozen(30, overdue_by=-1)}
    assert state.blind(now) == ["pods"]  # nodes: quiet, but the server has not ended it yet
    assert not state.ready(now)
    pods = state.readers["pods"]
    assert pods.stalled(now) and pods.connected
    since = pods.blind_since(now)
    assert since is not None and 29 < now - since < 31


def test_a_recently_frozen_watch_is_within_the_grace(state: ControllerState) -> None:
    state.mark_synced()
    state.readers = {"pods": frozen(READY_GRACE - 1, overdue_by=1)}
    assert state.ready(time.monotonic())


async def test_the_watch_series_and_statusz_count_a_frozen_watch_as_down(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics
) -> None:
    state.mark_synced()
    state.readers = {"pods": frozen(20, overdue_by=1)}
    async with TestClient(TestServer(health_app(state, leading, metrics))) as client:
        text = await (await client.get("/metrics")).text()
        assert (await client.get("/readyz")).status == 503
        status = await (await client.get("/statusz")).json()
    assert status["readers"]["pods"]["connected"] is False
    assert 'elastic_quota_watch_connected{kind="pods"} 0.0' in text
    assert 19 < down_seconds(text, "pods") < 30


def test_the_readers_report_to_the_state(state: ControllerState, api: client.ApiClient) -> None:
    ingest = Ingest(state, api)
    assert state.readers == {reader.kind.name: reader.health for reader in ingest.readers}
    assert sorted(state.readers) == ["elasticquotaprofiles", "elasticquotas", "nodes", "pods"]


async def test_statusz_after_a_quota_change_rebuilds_off_the_loop(
    state: ControllerState, leading: asyncio.Event, k8s: Bodies, worker: WorkerThreads
) -> None:
    epoch = state.engine.topology_epoch
    state.on_quota(k8s.quota("a", max={"cpu": "4"}))  # the topology is stale now
    async with TestClient(TestServer(health_app(state, leading))) as client:
        status = await (await client.get("/statusz")).json()
    assert state.engine.topology_epoch - epoch == worker.names("compute_rebuild") == 1
    assert status["topology_stale"] is False and status["trees"] == [""]
    assert status["quotas"] == 1 and status["problems"] == 0
