"""Level-based reconciling: which writes a tree needs, how they are sent, when loops may write.

Rules (controller/reconcile/reconciler.py): only quotas that exist as objects and differ from their
result are written (an unchanged quota never, a restarted replica nothing); a write is one merge
patch of the annotations and one of ``status.used``, and the server's object becomes the current
one; a refused write is counted and retried after the interval; at most ``write_concurrency`` writes
are in flight; a tree's loop writes at most once per interval and only when woken; nothing is
written before the initial listing (``synced``) nor by a replica that is not the leader.

Loop tests run on virtual time (looptime): ``asyncio.sleep`` returns at once and the loop's clock
jumps, so "after 10 s" costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from background import reconciling, running
from kubernetes_asyncio.client.exceptions import ApiException
from yielding import yields_during

from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.reconciler import TreeLoop
from elasticquota.controller.reconcile.writer import (
    Writer,
    moved_in_slices,
    pending_writes,
    pending_writes_in_slices,
)
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.decisions.diff import QuotaWrite, quota_write
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

DEFAULT = keys.DEFAULT_TREE
SettingsFactory = Callable[..., Settings]


def add_quota(state: ControllerState, cluster: FakeCluster, body: dict[str, Any]) -> None:
    cluster.store(body)
    state.on_quota(body)


@pytest.fixture
def world(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """A node, quotas ``a`` and ``b`` (objects never written) and a running pod in ``a``."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    add_quota(state, cluster, k8s.quota("a", min={"cpu": "2"}, max={"cpu": "4"}))
    add_quota(state, cluster, k8s.quota("b", min={"cpu": "2"}, max={"cpu": "4"}))
    state.on_pod(k8s.pod("p1", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    return state


def written_names(cluster: FakeCluster) -> list[str]:
    return [name for _, _, name, _ in cluster.writes()]


# -- pending_writes -------------------------------------------------------------------------------


def test_only_quotas_that_exist_as_objects_are_written(world: ControllerState) -> None:
    results = world.engine.solve_tree(DEFAULT)
    assert {keys.ROOT_QUOTA, keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA} <= set(results)
    assert {change.name for change in pending_writes(world, results)} == {"a", "b"}


def test_pending_writes_are_the_diff_of_each_object(world: ControllerState) -> None:
    results = world.engine.solve_tree(DEFAULT)
    current = world.quotas[("team", "a")]
    expected = quota_write(results["a"], current.annotations, current.status)
    assert next(c for c in pending_writes(world, results) if c.name == "a") == expected


@pytest.fixture
def seven(world: ControllerState, cluster: FakeCluster, k8s: Bodies) -> None:
    """Seven more quotas, q0 to q6, in ``world``'s default tree."""
    for index in range(7):
        add_quota(world, cluster, k8s.quota(f"q{index}", max={"cpu": "1"}))


async def test_the_sliced_diff_yields_between_slices_and_finds_the_same_writes(
    world: ControllerState, seven: None
) -> None:
    results = world.engine.solve_tree(DEFAULT)
    sliced, yields = await yields_during(pending_writes_in_slices(world, results, size=3))
    assert sliced == pending_writes(world, results)
    assert len(results) >= 9
    assert yields >= 2  # other tasks ran between the slices


async def test_the_changed_results_are_sorted_out_in_slices_of_time(
    world: ControllerState, k8s: Bodies, seven: None
) -> None:
    before = dict(world.engine.solve_tree(DEFAULT))
    world.on_pod(k8s.pod("p", quota="q3", requests={"cpu": "1"}, node="n1", phase="Running"))
    after = world.engine.solve_tree(DEFAULT)
    moved, yields = await yields_during(moved_in_slices(list(after), before, after, budget=0.0))
    assert "q3" in moved and "q0" not in moved
    assert yields >= len(after) // 2  # no time to spare: yields all along


async def test_the_sliced_diff_yields_once_a_slice_has_used_its_time(
    world: ControllerState, seven: None
) -> None:
    results = world.engine.solve_tree(DEFAULT)
    work = pending_writes_in_slices(world, results, size=1000, budget=0.0)
    sliced, yields = await yields_during(work)
    assert sliced == pending_writes(world, results)
    assert yields >= len(results) // 2  # no time to spare: yields all along (by count: none)


# -- Writer ---------------------------------------------------------------------------------------


@pytest.fixture
def writer(world: ControllerState, context: LoopContext) -> Writer:
    return Writer(context.cluster, world, context.settings)


async def write_pending(world: ControllerState, writer: Writer) -> None:
    """Send every write the default tree needs now."""
    for change in pending_writes(world, world.engine.solve_tree(DEFAULT)):
        await writer.write(change)


async def test_a_write_sends_the_annotations_and_the_status_in_one_call(
    world: ControllerState, cluster: FakeCluster, make_settings: Any
) -> None:
    change = next(c for c in pending_writes(world, world.engine.solve_tree(DEFAULT)))
    writer = Writer(cluster, world, make_settings())

    assert await writer.write(change)

    patch = {"metadata": {"annotations": change.annotations}, "status": {"used": change.used}}
    assert cluster.calls == [("write_quota", "team", change.name, patch)]
    assert (writer.stats.writes, writer.stats.failures) == (1, 0)


async def test_the_servers_object_becomes_the_current_one(
    world: ControllerState, cluster: FakeCluster, writer: Writer
) -> None:
    await write_pending(world, writer)

    assert (
        world.quotas[("team", "a")].annotations
        == (cluster.quotas[("team", "a")]["metadata"]["annotations"])
    )
    assert world.quotas[("team", "a")].status == cluster.quotas[("team", "a")]["status"]
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []


async def test_a_restarted_replica_writes_nothing(
    world: ControllerState,
    cluster: FakeCluster,
    writer: Writer,
    k8s: Bodies,
) -> None:
    await write_pending(world, writer)

    fresh = ControllerState.create(EngineSettings())
    fresh.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    for body in cluster.quotas.values():
        fresh.on_quota(body)
    fresh.on_pod(k8s.pod("p1", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))

    assert pending_writes(fresh, fresh.engine.solve_tree(DEFAULT)) == []


async def test_only_what_changed_is_sent(
    world: ControllerState,
    cluster: FakeCluster,
    writer: Writer,
    k8s: Bodies,
) -> None:
    await write_pending(world, writer)
    cluster.calls.clear()

    # A pending pod changes requests, not used: annotations only.
    world.on_pod(k8s.pod("p2", quota="b", requests={"cpu": "1"}))
    await write_pending(world, writer)
    assert [(verb, name) for verb, _, name, _ in cluster.calls] == [("write_quota", "b")]
    assert "status" not in cluster.calls[0][3]
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []  # the reply was kept


async def test_a_status_only_change_sends_no_annotations(
    world: ControllerState, cluster: FakeCluster, writer: Writer
) -> None:
    await write_pending(world, writer)
    cluster.calls.clear()
    cluster.store({**cluster.quotas[("team", "a")], "status": {"used": {"cpu": "3"}}})
    world.on_quota(cluster.quotas[("team", "a")])  # someone edited status.used by hand

    await write_pending(world, writer)
    assert cluster.calls == [("write_quota", "team", "a", {"status": {"used": {"cpu": "1"}}})]


async def test_dry_run_writes_nothing(
    world: ControllerState, cluster: FakeCluster, make_settings: Any
) -> None:
    writer = Writer(DryRunCluster(), world, make_settings())
    changes = pending_writes(world, world.engine.solve_tree(DEFAULT))
    for change in changes:
        assert await writer.write(change)
    assert cluster.calls == []
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == changes  # memory as it was


async def test_an_outage_of_writes_is_logged_once_and_its_end_once(
    world: ControllerState,
    cluster: FakeCluster,
    make_settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster.fail("write_quota", TimeoutError(), ApiException(status=503), TimeoutError())
    change = next(c for c in pending_writes(world, world.engine.solve_tree(DEFAULT)))
    writer = Writer(cluster, world, make_settings())

    with caplog.at_level(logging.DEBUG, logger="elasticquota.controller.reconcile.writer"):
        outcomes = [await writer.write(change) for _ in range(4)]

    assert outcomes == [False, False, False, True]
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    assert [level for level, _ in said] == [logging.WARNING, logging.INFO]
    assert "quota writes failing" in said[0][1] and change.name in said[0][1]
    assert said[1][1].startswith("quota writes succeed again after ")


async def test_a_refused_write_is_counted_and_reported(
    world: ControllerState, cluster: FakeCluster, make_settings: Any
) -> None:
    cluster.fail("write_quota", ApiException(status=422, reason="Unprocessable Entity"))
    change = next(c for c in pending_writes(world, world.engine.solve_tree(DEFAULT)))
    writer = Writer(cluster, world, make_settings())

    assert not await writer.write(change)

    assert cluster.verbs() == ["write_quota"]
    assert (writer.stats.writes, writer.stats.failures) == (0, 1)
    assert world.quotas[("team", change.name)].annotations == {}


@pytest.mark.looptime
async def test_at_most_write_concurrency_writes_are_in_flight(
    state: ControllerState,
    cluster: FakeCluster,
    make_settings: Any,
    k8s: Bodies,
) -> None:
    for index in range(10):
        add_quota(state, cluster, k8s.quota(f"q{index}", max={"cpu": "1"}))
    cluster.latency = 1.0
    writer = Writer(cluster, state, make_settings(write_concurrency=3))

    changes = pending_writes(state, state.engine.solve_tree(DEFAULT))
    assert all(await asyncio.gather(*(writer.write(change) for change in changes)))

    assert len(changes) == 10
    assert cluster.max_in_flight == 3


async def test_the_changes_are_written_in_order_and_each_answer_is_kept(
    state: ControllerState, cluster: FakeCluster, make_settings: Any, k8s: Bodies
) -> None:
    for name in ("a", "b"):
        cluster.store(k8s.quota(name))
        state.on_quota(k8s.quota(name))
    writer = Writer(cluster, state, make_settings(write_concurrency=1))
    changes = [QuotaWrite("team", name, {"k": name}, {"cpu": "1"}) for name in ("a", "b")]

    assert await writer.write_all(changes) == [True, True]

    assert [(verb, name) for verb, _, name, _ in cluster.calls] == [
        ("write_quota", "a"),
        ("write_quota", "b"),
    ]
    assert state.quotas[("team", "b")].annotations == {"k": "b"}  # each answer kept
    assert state.quotas[("team", "b")].status == {"used": {"cpu": "1"}}
    assert writer.stats.writes == 2


@pytest.mark.looptime
async def test_a_pass_cancelled_in_the_middle_of_its_writes_gives_their_slots_back(
    state: ControllerState, cluster: FakeCluster, make_settings: Any, k8s: Bodies
) -> None:
    """A tree's loop is cancelled when its tree goes, maybe while it writes: the slots every loop
    shares must not stay taken, or no quota would be written again."""
    for index in range(4):
        cluster.store(k8s.quota(f"q{index}"))
    cluster.latency = 10.0
    writer = Writer(cluster, state, make_settings(write_concurrency=2))
    changes = [QuotaWrite("team", f"q{index}", {"k": "v"}, None) for index in range(4)]
    cancelled = asyncio.create_task(writer.write_all(changes))
    await asyncio.sleep(1)
    cancelled.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await cancelled
    await asyncio.sleep(0)
    cluster.max_in_flight = 0

    assert await asyncio.wait_for(writer.write_all(changes[:2]), 15) == [True, True]
    assert cluster.max_in_flight == 2


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


async def test_many_writes_keep_at_most_write_concurrency_requests_in_flight_in_order(
    world: ControllerState,
    cluster: FakeCluster,
    make_settings: Any,
    k8s: Bodies,
) -> None:
    """Thousands of writes in a pass must not become thousands of tasks at once."""
    writer = Writer(cluster, world, make_settings(write_concurrency=3))
    for index in range(10):
        cluster.store(k8s.quota(f"q{index}"))
    cluster.refused.add("q5")
    cluster.latency = 0.001
    changes = [QuotaWrite("team", f"q{index}", {"k": "v"}, None) for index in range(10)]
    tasks_before = len(asyncio.all_tasks())
    outcomes = await writer.write_all(changes)
    assert outcomes == [index != 5 for index in range(10)]
    assert cluster.named("write_quota") == [f"q{index}" for index in range(10)]
    assert cluster.max_in_flight == 3
    assert len(asyncio.all_tasks()) == tasks_before
