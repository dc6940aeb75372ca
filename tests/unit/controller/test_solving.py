"""Solves and topology rebuilds off the event loop (controller/solving.py): computed in a worker
thread, published on the loop, equal to a synchronous solve; one rebuild at a time per engine;
pod events during a rebuild count."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.solving import (
    SWITCH_INTERVAL,
    published_snapshot,
    rebuild_off_loop,
    solve_tree_off_loop,
    solved_snapshot,
    use_one_solver_thread,
)
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import DEFAULT_TREE, RESERVED_QUOTAS
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import QuotaResult
from elasticquota.core.solve.solvejob import Solver
from elasticquota.kernels import SolveResult, TreeArrays, solve_tree

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


def world(k8s: Bodies, engine: QuotaEngine | None = None) -> ControllerState:
    state = ControllerState(engine=engine or QuotaEngine(EngineSettings()))
    state.on_node(k8s.node("n1", allocatable={"cpu": "8"}))
    state.on_quota(k8s.quota("a", min={"cpu": "2"}, max={"cpu": "4"}))
    state.on_pod(k8s.pod("p", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    return state


async def test_the_solve_runs_in_a_worker_thread_and_equals_a_synchronous_one(
    k8s: Bodies, worker: WorkerThreads
) -> None:
    off_loop, direct = world(k8s), world(k8s)
    assert await solve_tree_off_loop(off_loop.engine, "")
    assert worker.names("compute") == 1 and threading.get_ident() not in worker.threads()
    assert dict(off_loop.engine.published("")) == dict(direct.engine.solve_tree(""))
    assert not await solve_tree_off_loop(off_loop.engine, "")  # up to date: nothing to do


async def test_the_published_results_are_compared_and_merged_in_the_worker_thread(
    k8s: Bodies, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst moves every row of a 10,000-quota tree: comparing each fresh result with the
    published one on the loop held it for 0.1-0.2 s at 100,000 pods."""
    state = world(k8s)
    await solve_tree_off_loop(state.engine, "")
    state.on_pod(k8s.pod("q", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    on_the_loop: list[str] = []
    elsewhere: list[str] = []
    equal = QuotaResult.__eq__

    def recorded(self: QuotaResult, other: object) -> bool:
        loop = threading.get_ident() == loop_thread
        (on_the_loop if loop else elsewhere).append(self.name)
        return equal(self, other)

    loop_thread = threading.get_ident()
    monkeypatch.setattr(QuotaResult, "__eq__", recorded)
    assert await solve_tree_off_loop(state.engine, "")
    assert "a" in elsewhere and "a" not in on_the_loop
    # On the loop: only the default tree's reserved quotas, merged at publication (a few).
    assert set(on_the_loop) <= set(RESERVED_QUOTAS)
    assert state.engine.published("")["a"].used == {"cpu": 2000}
    assert state.engine.take_changed("") >= {"a"}


async def test_the_over_used_quotas_are_kept_as_results_are_published(k8s: Bodies) -> None:
    """Revocation reads them at every check instead of looking at all 10,000 quotas."""
    state = ControllerState.create(EngineSettings())
    state.on_node(k8s.node("n1", allocatable={"cpu": "8"}))
    state.on_quota(k8s.quota("a", min={"cpu": "0"}, max={"cpu": "8"}))
    state.on_quota(k8s.quota("b", min={"cpu": "4"}, max={"cpu": "8"}))
    state.on_pod(k8s.pod("p", quota="a", requests={"cpu": "6"}, node="n1", phase="Running"))

    async def over_used() -> frozenset[str]:
        snapshot = await solved_snapshot(state.engine)
        kept = snapshot.over_used
        assert kept == replace(snapshot, over_used=None).over_used_quotas()  # as a look finds
        return frozenset(kept or ())

    assert await over_used() == frozenset()  # a borrows what b leaves idle
    state.on_pod(k8s.pod("q", quota="b", requests={"cpu": "4"}))
    assert await over_used() == {"a"}  # b wants its min back
    state.on_pod_deleted(k8s.pod("q", quota="b", requests={"cpu": "4"}))
    assert await over_used() == frozenset()


async def test_a_solved_snapshot_has_every_tree_up_to_date(k8s: Bodies) -> None:
    state = world(k8s)
    snapshot = await solved_snapshot(state.engine)
    assert state.engine.dirty_trees() == []
    assert snapshot.quotas["a"].used == {"cpu": 1000}


async def test_a_solve_is_timed_for_its_tree_whoever_asks_for_it(k8s: Bodies) -> None:
    """Revocation and gating solve through ``solved_snapshot``: the tree loop then finds the tree
    up to date, so a solve left untimed there would be missing from the histogram."""
    state, metrics = world(k8s), Metrics()

    def solves() -> float:
        labels = {"tree": DEFAULT_TREE}
        return metrics.registry.get_sample_value("elastic_quota_solve_seconds_count", labels) or 0

    await solved_snapshot(state.engine, metrics)
    assert solves() == 1
    await solved_snapshot(state.engine, metrics)  # up to date: no solve
    state.on_pod(k8s.pod("q", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    assert await solve_tree_off_loop(state.engine, DEFAULT_TREE, metrics)
    assert solves() == 2


async def test_a_rebuild_runs_in_a_worker_thread(k8s: Bodies, worker: WorkerThreads) -> None:
    state = world(k8s)
    await rebuild_off_loop(state.engine)
    state.on_quota(k8s.quota("b", max={"cpu": "4"}))  # a new quota: a new topology
    await rebuild_off_loop(state.engine)
    assert worker.names("compute_rebuild") == 2
    assert threading.get_ident() not in worker.threads()
    assert state.engine.prepare_rebuild() is None  # up to date
    assert "b" in (await solved_snapshot(state.engine)).quotas


async def test_pods_seen_while_a_rebuild_computes_count_and_callers_share_it(
    k8s: Bodies, worker: WorkerThreads
) -> None:
    worker.hold("compute_rebuild")
    state = world(k8s)
    state.on_quota(k8s.quota("b", max={"cpu": "4"}))
    first = asyncio.create_task(rebuild_off_loop(state.engine))
    second = asyncio.create_task(rebuild_off_loop(state.engine))
    while not worker.started.is_set():
        await asyncio.sleep(0.001)  # the loop runs while the worker computes
    state.on_pod(k8s.pod("q", quota="b", requests={"cpu": "2"}, node="n1", phase="Running"))
    state.on_pod(k8s.pod("p", quota="a", requests={"cpu": "3"}, node="n1", phase="Running"))
    worker.release()
    await asyncio.gather(first, second)
    assert (
        worker.names("compute_rebuild") == 1
    )  # the second caller waited for the first one's rebuild
    snapshot = await solved_snapshot(state.engine)
    assert snapshot.quotas["a"].used == {"cpu": 3000}
    assert snapshot.quotas["b"].used == {"cpu": 2000}


async def test_a_quota_change_during_the_solves_is_rebuilt_off_the_loop_too(
    k8s: Bodies, worker: WorkerThreads
) -> None:
    """Every rebuild installed (``topology_epoch``) ran in the worker: none on the loop."""
    state = world(k8s)
    worker.hold("compute")
    snapshot = asyncio.create_task(solved_snapshot(state.engine))
    while not worker.started.is_set():
        await asyncio.sleep(0.001)
    epoch, rebuilds = state.engine.topology_epoch, worker.names("compute_rebuild")
    state.on_quota(k8s.quota("late", max={"cpu": "4"}))  # arrives while a tree is solved
    worker.release()
    assert "late" in (await snapshot).quotas and not state.engine.topology_stale
    assert state.engine.topology_epoch - epoch == worker.names("compute_rebuild") - rebuilds == 1


async def test_the_published_snapshot_rebuilds_off_the_loop_when_a_quota_changed(
    k8s: Bodies, worker: WorkerThreads
) -> None:
    state = world(k8s)
    await solved_snapshot(state.engine)
    epoch, rebuilds = state.engine.topology_epoch, worker.names("compute_rebuild")
    state.on_quota(k8s.quota("b", max={"cpu": "4"}))
    assert "b" in (await published_snapshot(state.engine)).quotas
    assert state.engine.topology_epoch - epoch == worker.names("compute_rebuild") - rebuilds == 1
    state.on_pod(k8s.pod("q", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    assert (await published_snapshot(state.engine)).quotas["a"].used == {"cpu": 1000}  # last solve


@pytest.fixture
def switch_interval() -> Iterator[None]:
    """``use_one_solver_thread`` changes the process's switch interval: put it back."""
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("switch_interval")
async def test_with_one_solver_thread_solves_and_rebuilds_run_there_one_at_a_time(
    k8s: Bodies,
) -> None:
    """Two solves at once finish no sooner than one after the other (one interpreter), and each
    Python thread beside the loop's is one more the loop waits for."""
    running, most, threads = 0, 0, set[str]()
    guard = threading.Lock()

    def watched(solver: Solver) -> Solver:
        def solve(arrays: TreeArrays, scale: bool) -> SolveResult:
            nonlocal running, most
            with guard:
                running += 1
                most = max(most, running)
                threads.add(threading.current_thread().name)
            time.sleep(0.02)  # long enough for a second thread, were there one, to start
            with guard:
                running -= 1
            return solver(arrays, scale)

        return solve

    engines = [QuotaEngine(EngineSettings(), solver=watched(solve_tree)) for _ in range(4)]
    for engine in engines:
        world(k8s, engine)
    executor = use_one_solver_thread()
    try:
        assert all(await asyncio.gather(*(solve_tree_off_loop(e, "") for e in engines)))
    finally:
        executor.shutdown()
    assert most == 1
    assert {name.split("_")[0] for name in threads} == {"solver"}
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
