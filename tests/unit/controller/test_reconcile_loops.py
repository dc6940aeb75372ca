"""Level-based reconciling: when loops may write (a tree's ``TreeLoop``, the ``Reconciler``).

Rules (controller/reconcile/reconciler.py): a tree's loop writes at most once per interval and only
when woken; a refused write is retried after the interval; only changes are written, a restarted
operator writes nothing; nothing is written before the initial listing (``synced``) nor by a
replica that is not the leader; each tree has its own loop, and a vanished tree loses it.

Loop tests run on virtual time (looptime): ``asyncio.sleep`` returns at once and the loop's clock
jumps, so "after 10 s" costs nothing.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from background import reconciling, running
from cluster_quotas import DEFAULT, add_quota
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.reconciler import TreeLoop
from elasticquota.controller.reconcile.writer import Writer, pending_writes
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

SettingsFactory = Callable[..., Settings]


def written_names(cluster: FakeCluster) -> list[str]:
    return [name for _, _, name, _ in cluster.writes()]


# -- TreeLoop -------------------------------------------------------------------------------------


def tree_loop(context: LoopContext, passes: list[float] | None = None) -> TreeLoop:
    """The default tree's loop (``passes``: when each pass ended, by the event loop's clock)."""

    def on_pass() -> None:
        if passes is not None:
            passes.append(asyncio.get_running_loop().time())

    state, settings = context.state, context.settings
    writer = Writer(context.cluster, state, settings)
    interval = settings.reconcile_interval
    return TreeLoop(DEFAULT, state, writer, interval, context.leading, on_pass)


def paced(context: LoopContext, make_settings: SettingsFactory, interval: float) -> LoopContext:
    """``context`` with a reconcile interval of ``interval`` seconds."""
    return replace(context, settings=make_settings(reconcile_interval=interval))


async def test_one_pass_reports_whether_every_write_succeeded(
    world: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    loop = tree_loop(context)
    cluster.fail("write_quota", ApiException(status=500, reason="boom"))
    assert not await loop.reconcile_once()
    assert await loop.reconcile_once()  # the one refused is written now
    assert await loop.reconcile_once()  # nothing left to write
    assert sorted(written_names(cluster)) == ["a", "a", "b"]  # a refused, a, b


@pytest.mark.looptime
async def test_a_tree_loop_writes_only_when_woken_and_leading(
    world: ControllerState, cluster: FakeCluster, context: LoopContext, leading: asyncio.Event
) -> None:
    leading.clear()
    loop = tree_loop(context)
    async with running(loop.run()):
        leading.set()
        await asyncio.sleep(10)
        assert cluster.calls == []  # never woken

        leading.clear()
        loop.wake.set()
        await asyncio.sleep(10)
        assert cluster.calls == []  # woken, but not the leader

        leading.set()
        await asyncio.sleep(0.5)
        assert sorted(set(written_names(cluster))) == ["a", "b"]


@pytest.mark.looptime
async def test_a_quota_is_written_at_most_once_per_interval(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    make_settings: SettingsFactory,
    k8s: Bodies,
    looptime: Any,
) -> None:
    loop = tree_loop(paced(context, make_settings, 5.0))
    write_times: list[float] = []

    class TimedCalls(list[Any]):
        def append(self, call: Any) -> None:
            if call[0] == "write_quota" and call[2] == "b":
                write_times.append(float(looptime))
            super().append(call)

    cluster.calls = TimedCalls()
    async with running(loop.run()):
        for step in range(40):  # a pod changes every 0.5 s for 20 s, each change wakes the loop
            world.on_pod(k8s.pod(f"p{step}", quota="b", requests={"cpu": "10m"}))
            loop.wake.set()
            await asyncio.sleep(0.5)
        await asyncio.sleep(6)  # the last change is written once its interval has passed

    gaps = [later - earlier for earlier, later in itertools.pairwise(write_times)]
    assert len(write_times) >= 4
    assert all(gap >= 5.0 for gap in gaps)
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []


@pytest.mark.looptime
async def test_a_quiet_quota_is_written_without_waiting(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    make_settings: SettingsFactory,
    k8s: Bodies,
) -> None:
    loop = tree_loop(paced(context, make_settings, 5.0))
    async with running(loop.run()):
        loop.wake.set()
        await asyncio.sleep(10)  # initial writes done, interval long past
        cluster.calls.clear()
        world.on_pod(k8s.pod("late", quota="b", requests={"cpu": "10m"}))
        loop.wake.set()
        await asyncio.sleep(0.01)
        assert [c[2] for c in cluster.calls if c[0] == "write_quota"] == ["b"]


@pytest.mark.looptime
async def test_a_refused_write_is_retried_one_interval_later(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    make_settings: SettingsFactory,
    looptime: Any,
) -> None:
    cluster.fail("write_quota", ApiException(status=409, reason="Conflict"))
    passes: list[float] = []
    loop = tree_loop(paced(context, make_settings, 3.0), passes)
    start = float(looptime)
    async with running(loop.run()):
        loop.wake.set()
        await asyncio.sleep(10)

    assert [round(t - start, 3) for t in passes] == [0.0, 3.0]  # retried once, then quiet
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []


# -- Reconciler -----------------------------------------------------------------------------------


@pytest.mark.looptime
async def test_nothing_is_written_before_the_initial_listing_nor_by_a_standby(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    leading: asyncio.Event,
    listed: bool,
) -> None:
    async with reconciling(context, synced=listed) as reconciler:
        await asyncio.sleep(30)
        assert cluster.calls == [] and (listed or reconciler.passes == 0)

        world.mark_synced()
        leading.set()
        await asyncio.sleep(2)
        assert sorted(set(written_names(cluster))) == ["a", "b"]


@pytest.mark.looptime
async def test_writes_happen_only_on_change(
    world: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    async with reconciling(context) as reconciler:
        await asyncio.sleep(5)
        first = len(cluster.calls)
        assert first == 2  # a and b: annotations and status in one write each

        for _ in range(10):  # echoes of our own writes, relists: nothing to write
            world.on_quota(cluster.quotas[("team", "a")])
            await asyncio.sleep(1)
        assert len(cluster.calls) == first
        assert reconciler.passes > 2  # the loop did look

        world.on_pod(k8s.pod("p2", quota="b", requests={"cpu": "1"}))
        await asyncio.sleep(5)
        assert [(v, n) for v, _, n, _ in cluster.calls[first:]] == [("write_quota", "b")]


@pytest.mark.looptime
async def test_a_restarted_operator_writes_nothing(
    world: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    async with reconciling(context):
        await asyncio.sleep(5)
    cluster.calls.clear()

    fresh = ControllerState.create(EngineSettings())
    fresh.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    for body in list(cluster.quotas.values()):
        fresh.on_quota(body)
    fresh.on_pod(k8s.pod("p1", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    async with reconciling(replace(context, state=fresh)) as reconciler:
        await asyncio.sleep(10)
    assert reconciler.passes >= 1
    assert cluster.calls == []


@pytest.mark.looptime
async def test_each_tree_has_its_own_loop_and_a_vanished_tree_loses_it(
    state: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    pool = k8s.quota("pool", max={"cpu": "4"}, labels={keys.LABEL_TREE_ID: "7"})
    add_quota(state, cluster, pool)
    add_quota(state, cluster, k8s.quota("a", max={"cpu": "4"}))

    def tree_tasks() -> set[str]:
        return {t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("tree ")}

    async with reconciling(context):
        await asyncio.sleep(2)
        assert tree_tasks() == {"tree ''", "tree '7'"}
        assert sorted(written_names(cluster)) == ["a", "pool"]

        state.on_quota_deleted(pool)
        await asyncio.sleep(2)
        assert tree_tasks() == {"tree ''"}
    assert tree_tasks() == set()
