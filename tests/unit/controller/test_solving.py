"""Solves off the event loop (controller/solving.py): computed in a worker thread, published on
the loop, equal to a synchronous solve."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from elasticquota.controller import solving
from elasticquota.controller.solving import solve_tree_off_loop, solved_snapshot
from elasticquota.controller.state import ControllerState
from elasticquota.core.engine import EngineSettings
from elasticquota.core.solvejob import SolveJob, SolveOutcome, Solver, compute

if TYPE_CHECKING:
    from conftest import Bodies


def world(k8s: Bodies) -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_node(k8s.node("n1", allocatable={"cpu": "8"}))
    state.on_quota(k8s.quota("a", min={"cpu": "2"}, max={"cpu": "4"}))
    state.on_pod(k8s.pod("p", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    return state


async def test_the_solve_runs_in_a_worker_thread_and_equals_a_synchronous_one(
    k8s: Bodies, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []

    def recorded(job: SolveJob, solver: Solver) -> SolveOutcome:
        threads.append(threading.get_ident())
        return compute(job, solver)

    monkeypatch.setattr(solving, "compute", recorded)
    off_loop, direct = world(k8s), world(k8s)
    assert await solve_tree_off_loop(off_loop.engine, "")
    assert threads and threading.get_ident() not in threads
    assert dict(off_loop.engine.published("")) == dict(direct.engine.solve_tree(""))
    assert not await solve_tree_off_loop(off_loop.engine, "")  # up to date: nothing to do


async def test_a_solved_snapshot_has_every_tree_up_to_date(k8s: Bodies) -> None:
    state = world(k8s)
    snapshot = await solved_snapshot(state.engine)
    assert state.engine.dirty_trees() == []
    assert snapshot.quotas["a"].used == {"cpu": 1000}
