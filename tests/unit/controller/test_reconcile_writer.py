"""Level-based reconciling: how the writes a tree needs are sent (``Writer``).

Rules (controller/reconcile/writer.py): only what differs is written (an unchanged quota never, a
restarted replica nothing); a write is one merge patch of the annotations and one of
``status.used``, and the server's object becomes the current one; a refused write is counted and
reported, an outage of writes logged once and its end once; at most ``write_concurrency`` writes
are in flight, sent in order, and a pass cancelled meanwhile gives their slots back; a dry run
writes nothing.

Loop tests run on virtual time (looptime): ``asyncio.sleep`` returns at once and the loop's clock
jumps, so "after 10 s" costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import pytest
from cluster_quotas import DEFAULT, add_quota
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.writer import Writer, pending_writes
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.decisions.diff import QuotaWrite
from elasticquota.core.solve.engine import EngineSettings

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster


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
    request = keys.ANNO_REQUEST  # the writer writes the operator's annotations
    changes = [QuotaWrite("team", name, {request: name}, {"cpu": "1"}) for name in ("a", "b")]

    assert await writer.write_all(changes) == [True, True]

    assert [(verb, name) for verb, _, name, _ in cluster.calls] == [
        ("write_quota", "a"),
        ("write_quota", "b"),
    ]
    assert state.quotas[("team", "b")].annotations == {request: "b"}  # each answer kept
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
