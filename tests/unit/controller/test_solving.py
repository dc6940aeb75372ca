"""Solves and topology rebuilds off the event loop (controller/solving.py): computed in a worker
thread, published on the loop, equal to a synchronous solve; one rebuild at a time per engine;
pod events during a rebuild count."""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from elasticquota.controller.solving import rebuild_off_loop, solve_tree_off_loop, solved_snapshot
from elasticquota.controller.state import ControllerState
from elasticquota.core.engine import EngineSettings

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


def world(k8s: Bodies) -> ControllerState:
    state = ControllerState.create(EngineSettings())
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


async def test_a_solved_snapshot_has_every_tree_up_to_date(k8s: Bodies) -> None:
    state = world(k8s)
    snapshot = await solved_snapshot(state.engine)
    assert state.engine.dirty_trees() == []
    assert snapshot.quotas["a"].used == {"cpu": 1000}


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
