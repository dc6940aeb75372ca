"""Incremental reconciling: a pass diffs only the quotas that may need a write, and writes the same.

Rules (controller/reconcile/reconciler.py): a tree loop's pass diffs the quotas whose results
changed what they write, those whose objects were seen since its last pass (routed by the
dispatcher: our own writes echoing back, edits by hand) and those whose writes were deferred or
refused; every quota on its first pass, after a topology change, after a failed pass and when the
replica becomes the leader. Whatever it diffs, it writes exactly what a diff of every quota would
write. A change wakes only the loops of the trees it touched: a pod event its trees' loops
directly, any other change through the dispatcher. A standby's loops keep their trees solved and
diff what may have moved out of line, writing nothing; on the takeover they write that first, then
diff every quota, without solving anew.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import TYPE_CHECKING, Any

import pytest
from background import reconciling

from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.reconciler import TreeLoop
from elasticquota.controller.reconcile.writer import Writer, pending_writes
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.decisions.diff import QuotaWrite, quota_write, writes_alike
from elasticquota.kube.quotafigures import figures_patch

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads
    from fake_cluster import FakeCluster

DEFAULT = keys.DEFAULT_TREE
LEAVES = [f"leaf{index}" for index in range(8)]


class DiffRecorder(list[str]):
    """The names of the quotas a loop diffs, in order: the diff it is given records them."""

    def __call__(self, result: Any, annotations: Any, status: Any) -> QuotaWrite:
        self.append(result.name)
        return quota_write(result, annotations, status)


@pytest.fixture
def diffed() -> DiffRecorder:
    """The quotas diffed by the loops that are given this recorder as their diff."""
    return DiffRecorder()


@pytest.fixture
def world(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """A parent with 8 leaves in the default tree, a pool in tree 7, a pod in each leaf."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "64", "memory": "64Gi"}))
    bodies = [k8s.quota("parent", min={"cpu": "8"}, max={"cpu": "64"}, is_parent=True)]
    bodies += [
        k8s.quota(name, min={"cpu": "1"}, max={"cpu": "16"}, parent="parent") for name in LEAVES
    ]
    bodies.append(k8s.quota("pool", max={"cpu": "4"}, labels={keys.LABEL_TREE_ID: "7"}))
    for body in bodies:
        cluster.store(body)
        state.on_quota(body)
    for name in LEAVES:
        state.on_pod(k8s.pod(f"p-{name}", quota=name, requests={"cpu": "1"}, node="n1"))
    return state


def tree_loop(context: LoopContext, diff: DiffRecorder, tree_id: str = DEFAULT) -> TreeLoop:
    """The loop of ``tree_id``, with no interval between two writes of a quota, its diffs
    recorded by ``diff``."""
    writer = Writer(context.cluster, context.state, context.settings, diff=diff)
    return TreeLoop(tree_id, context.state, writer, 0.0, context.leading, lambda: None)


def with_objects(state: ControllerState, tree_id: str) -> set[str]:
    """The tree's quotas that exist as objects: the only ones ever diffed."""
    results = state.engine.solve_tree(tree_id)
    return {name for name, result in results.items() if (result.namespace, name) in state.quotas}


def route_echoes(state: ControllerState, loop: TreeLoop, cluster: FakeCluster) -> None:
    """The watch brings our own writes back to the reader; the dispatcher routes the objects
    seen since to their tree's loop."""
    for body in cluster.watch():
        state.on_quota(body)
    loop.note_objects(state.take_changed_quotas())


@pytest.fixture
async def settled(
    world: ControllerState, context: LoopContext, cluster: FakeCluster, diffed: DiffRecorder
) -> TreeLoop:
    """The default tree's loop, its writes all done and their echoes diffed."""
    loop = tree_loop(context, diffed)
    await loop.reconcile_once()
    route_echoes(world, loop, cluster)
    await loop.reconcile_once()
    route_echoes(world, loop, cluster)
    return loop


def writes_of(cluster: FakeCluster, since: int) -> list[tuple[str, str, Any]]:
    return sorted((verb, name, body) for verb, _, name, body in cluster.writes()[since:])


async def test_a_pass_after_one_pod_change_diffs_only_the_quotas_whose_writes_changed(
    world: ControllerState,
    cluster: FakeCluster,
    settled: TreeLoop,
    k8s: Bodies,
    diffed: DiffRecorder,
) -> None:
    loop = settled
    before = dict(world.results[DEFAULT])
    world.on_pod(k8s.pod("late", quota="leaf3", requests={"cpu": "2"}))  # pending: request only
    after = world.engine.solve_tree(DEFAULT)
    expected = pending_writes(world, after)  # what a diff of every quota writes
    changed = {name for name, result in after.items() if not writes_alike(before[name], result)}
    changed &= with_objects(world, DEFAULT)
    diffed.clear()
    start = len(cluster.writes())

    await loop.reconcile_once()

    assert sorted(diffed) == sorted(changed)
    assert "leaf3" in changed and len(changed) < len(after) / 2
    assert expected and writes_of(cluster, start) == sorted(
        ("write_quota", change.name, figures_patch(change.annotations, change.used))
        for change in expected
    )


async def test_the_echo_of_a_write_is_diffed_once_more_and_an_edit_by_hand_is_undone(
    world: ControllerState,
    cluster: FakeCluster,
    settled: TreeLoop,
    diffed: DiffRecorder,
) -> None:
    loop = settled
    diffed.clear()
    edited = cluster.quotas[("team", "leaf5")]
    edited["metadata"]["annotations"][keys.ANNO_REQUEST] = '{"cpu":"99"}'
    world.on_quota(edited)  # someone edits our annotation
    route_echoes(world, loop, cluster)
    start = len(cluster.writes())

    await loop.reconcile_once()

    assert diffed == ["leaf5"]
    assert [(verb, name) for verb, name, _ in writes_of(cluster, start)] == [
        ("write_quota", "leaf5")
    ]
    diffed.clear()
    route_echoes(world, loop, cluster)  # the reply of that write
    await loop.reconcile_once()
    assert diffed == ["leaf5"] and len(cluster.writes()) == start + 1


async def test_a_refused_write_is_diffed_again_at_the_next_pass(
    world: ControllerState,
    cluster: FakeCluster,
    settled: TreeLoop,
    k8s: Bodies,
    diffed: DiffRecorder,
) -> None:
    from kubernetes_asyncio.client.exceptions import ApiException

    loop = settled
    world.on_pod(k8s.pod("late", quota="leaf1", requests={"cpu": "2"}))
    cluster.fail("write_quota", ApiException(status=500, reason="boom"))
    assert not await loop.reconcile_once()
    route_echoes(world, loop, cluster)
    diffed.clear()

    assert await loop.reconcile_once()

    assert sorted(diffed) == ["leaf1", "parent"]  # refused, and the echo of the parent's write
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []


async def test_a_failed_pass_makes_the_next_one_diff_everything(
    world: ControllerState,
    context: LoopContext,
    worker: WorkerThreads,
    k8s: Bodies,
    diffed: DiffRecorder,
) -> None:
    loop = tree_loop(context, diffed)
    await loop.reconcile_once()  # the first pass: every quota
    diffed.clear()
    world.on_pod(k8s.pod("late", quota="leaf1", requests={"cpu": "1"}))  # the tree is stale
    worker.break_next("compute")  # its next solve fails
    task = asyncio.create_task(loop.run())
    loop.wake.set()
    async with asyncio.timeout(10):  # the second pass fails before any diff; the retry follows
        while len(set(diffed)) < len(LEAVES) + 1:  # the parent and its leaves
            await asyncio.sleep(0.01)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert worker.names("compute") >= 2  # the failed solve, and the retry's
    assert set(diffed) == with_objects(world, DEFAULT)


@pytest.mark.looptime
async def test_a_change_wakes_only_the_loops_of_the_trees_it_touched(
    world: ControllerState,
    context: LoopContext,
    k8s: Bodies,
) -> None:
    async with reconciling(context) as reconciler:
        seen: collections.Counter[str] = collections.Counter()

        def passed_since() -> set[str]:
            """The trees whose loops made a pass since the last call."""
            nonlocal seen
            now = reconciler.passes_by_tree.copy()
            trees, seen = set(now - seen), now
            return trees

        await asyncio.sleep(5)
        assert passed_since() == {DEFAULT, "7"}

        world.on_pod(k8s.pod("late", quota="pool", requests={"cpu": "1"}))
        await asyncio.sleep(5)
        assert passed_since() == {"7"}  # and its echoes: tree 7 only

        world.on_pod(k8s.pod("later", quota="leaf0", requests={"cpu": "1"}))
        await asyncio.sleep(5)
        assert passed_since() == {DEFAULT}

        world.on_node(k8s.node("n2", allocatable={"cpu": "8"}))
        await asyncio.sleep(5)
        assert passed_since() == {DEFAULT}  # the nodes are the default tree's total
    assert pending_writes(world, world.engine.solve_tree(DEFAULT)) == []
    assert pending_writes(world, world.engine.solve_tree("7")) == []


@pytest.mark.looptime
async def test_a_replica_that_becomes_the_leader_diffs_every_quota(
    world: ControllerState,
    context: LoopContext,
    leading: asyncio.Event,
    diffed: DiffRecorder,
) -> None:
    async with reconciling(context, diff=diffed):
        await asyncio.sleep(5)
        leading.clear()
        await asyncio.sleep(5)
        diffed.clear()
        leading.set()
        await asyncio.sleep(5)
    assert with_objects(world, DEFAULT) | with_objects(world, "7") == set(diffed)


@pytest.mark.looptime
async def test_a_topology_change_makes_the_loops_diff_every_quota(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    k8s: Bodies,
    diffed: DiffRecorder,
) -> None:
    async with reconciling(context, diff=diffed):
        await asyncio.sleep(5)
        diffed.clear()
        body = k8s.quota("newcomer", max={"cpu": "1"})
        cluster.store(body)
        world.on_quota(body)
        await asyncio.sleep(5)
    assert with_objects(world, DEFAULT) | with_objects(world, "7") <= set(diffed)
    assert "newcomer" in {name for _, _, name, _ in cluster.writes()}


# -- a standby and its takeover -------------------------------------------------------------------


def out_of_line(state: ControllerState, tree_id: str) -> set[str]:
    """The tree's quotas whose objects differ from their results (solved now if out of date)."""
    return {change.name for change in pending_writes(state, state.engine.solve_tree(tree_id))}


@pytest.mark.looptime
async def test_a_standby_keeps_its_trees_solved_and_the_takeover_solves_nothing_anew(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    leading: asyncio.Event,
    worker: WorkerThreads,
    k8s: Bodies,
) -> None:
    leading.clear()
    async with reconciling(context):
        await asyncio.sleep(5)
        world.on_pod(k8s.pod("late", quota="leaf3", requests={"cpu": "2"}))
        world.on_pod(k8s.pod("late", quota="pool", requests={"cpu": "1"}))
        await asyncio.sleep(5)
        assert world.engine.dirty_trees() == []  # solved while standing by
        assert cluster.calls == []  # and nothing written
        solves = worker.names("compute")

        leading.set()
        await asyncio.sleep(5)
        assert worker.names("compute") == solves  # the takeover only diffed and wrote
    assert {name for _, _, name, _ in cluster.writes()} >= {"leaf3", "pool"}
    assert out_of_line(world, DEFAULT) == out_of_line(world, "7") == set()


@pytest.mark.looptime
async def test_the_takeover_writes_what_the_standby_found_out_of_line_then_diffs_every_quota(
    world: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    leading: asyncio.Event,
    k8s: Bodies,
    diffed: DiffRecorder,
) -> None:
    async with reconciling(context):
        await asyncio.sleep(5)  # the old leader wrote every quota
    leading.clear()
    async with reconciling(context, diff=diffed):  # a new replica, a standby
        await asyncio.sleep(5)
        world.on_pod(k8s.pod("late", quota="leaf3", requests={"cpu": "2"}))
        await asyncio.sleep(5)
        behind = out_of_line(world, DEFAULT)
        diffed.clear()
        start = len(cluster.writes())
        diffed_at_write: list[int] = []  # how many quotas were diffed when each write was sent

        class Calls(list[Any]):
            def append(self, call: Any) -> None:
                diffed_at_write.append(len(diffed))
                super().append(call)

        cluster.calls = Calls(cluster.calls)
        leading.set()
        await asyncio.sleep(5)
    quotas = with_objects(world, DEFAULT)
    in_tree = [name for name in diffed if name in quotas]
    assert behind and behind < quotas and "leaf3" in behind
    assert set(in_tree[: len(behind)]) == behind  # the quotas out of line first
    assert set(in_tree) == quotas  # then every quota
    assert {name for _, _, name, _ in cluster.writes()[start:]} == behind
    # written before the other quotas were diffed (the pool, of the other tree, may come first)
    assert max(diffed_at_write) <= len(behind) + 1
    assert out_of_line(world, DEFAULT) == set()
