"""The revocation check looks at the pods of over-used quotas only, and decides as before.

Rules (controller/enforcement/revocation.py, core/decisions/revocation.py): each check looks at
every quota's result, but at the pods of a quota only when its used exceeds its runtime (taking
terminating pods out can only lower the used) or when its over-use timer runs; for every other quota
a check records nothing and evicts nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement import revocation
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.revocation import quota_is_over_used
from elasticquota.core.generic.timeslice import SLICE_BUDGET
from elasticquota.core.keys import LABEL_ALLOW_LENT, POD_LABEL_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.core.solve.results import Snapshot
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import WorkerThreads

QUIET = [f"quiet{index}" for index in range(20)]


def checker(
    world: ControllerState,
    now: list[float],
    judge: Callable[[Snapshot, str], bool] = quota_is_over_used,
    slice_budget: float = SLICE_BUDGET,
) -> RevocationController:
    """A dry-run controller (30-s delay, a check a second) whose clock reads ``now[0]``."""
    settings = Settings(revocation_delay=30.0, revocation_interval=1.0)
    context = LoopContext(world, DryRunCluster(), settings, asyncio.Event())
    return RevocationController(context, lambda: now[0], judge=judge, slice_budget=slice_budget)


def quota(name: str, cpu: str) -> dict[str, Any]:
    labels = {LABEL_ALLOW_LENT: "false"}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {"min": {"cpu": cpu}, "max": {"cpu": cpu}},
    }


def running(name: str, quota: str, cpu: str, deleted: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {POD_LABEL_QUOTA: quota}}
    if deleted:
        metadata["deletionTimestamp"] = deleted
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


@pytest.fixture
def world() -> ControllerState:
    """20 quotas within their runtime, one over it, one over it only through a terminating pod."""
    state = ControllerState.create(EngineSettings())
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "64"}}})
    for name in QUIET:
        state.on_quota(quota(name, "2"))
        state.on_pod(running(f"{name}-pod", name, "1"))
    state.on_quota(quota("greedy", "2"))
    state.on_pod(running("greedy-a", "greedy", "2"))
    state.on_pod(running("greedy-b", "greedy", "1"))
    state.on_quota(quota("leaving", "2"))
    state.on_pod(running("leaving-a", "leaving", "2"))
    state.on_pod(running("leaving-b", "leaving", "1", deleted="2024-01-01T00:00:00Z"))
    state.mark_synced()
    return state


class PodsLookedAt(list[str]):
    """The over-use judge, noting the quotas whose pods it looks at."""

    def __call__(self, snapshot: Snapshot, quota: str) -> bool:
        noted = NotedPods(snapshot.pods_by_quota, self)
        return quota_is_over_used(dataclasses.replace(snapshot, pods_by_quota=noted), quota)


class NotedPods(dict[str, Sequence[PodInfo]]):
    """Each quota's pods; every quota they are asked for is noted in ``looked``."""

    def __init__(self, pods: Mapping[str, Sequence[PodInfo]], looked: list[str]) -> None:
        super().__init__(pods)
        self._looked = looked

    def get(self, quota: str, default: Any = None) -> Any:
        self._looked.append(quota)
        return super().get(quota, default)


@pytest.fixture
def pods_looked_at() -> PodsLookedAt:
    return PodsLookedAt()


async def test_only_the_pods_of_over_used_quotas_are_looked_at(
    world: ControllerState, pods_looked_at: PodsLookedAt
) -> None:
    controller = checker(world, [100.0], pods_looked_at)

    await controller.check_once()

    assert set(pods_looked_at) == {"greedy", "leaving"}
    assert controller._timer.since == {"greedy": 100.0}  # leaving's over-use is already going


async def test_a_running_timer_is_stopped_when_the_quota_fits_again(
    world: ControllerState, pods_looked_at: PodsLookedAt
) -> None:
    now = [100.0]
    controller = checker(world, now, pods_looked_at)
    await controller.check_once()
    world.on_pod_deleted(running("greedy-b", "greedy", "1"))
    now[0] = 200.0
    pods_looked_at.clear()

    await controller.check_once()

    assert controller._timer.since == {}
    assert set(pods_looked_at) <= {"leaving"}


# -- how often a check solves ---------------------------------------------------------------------


async def test_between_its_own_solves_a_check_reads_what_was_last_solved(
    world: ControllerState, worker: WorkerThreads
) -> None:
    now = [100.0]
    controller = checker(world, now)
    for second in range(5):
        now[0] = 100.0 + second
        world.on_pod(running(f"new-{second}", "quiet0", "0.1"))  # the tree is out of date again
        await controller.check_once()
    assert worker.names("compute") == 1
    assert controller._timer.since == {"greedy": 100.0}  # judged on the last solved results
    now[0] = 100.0 + revocation.SOLVE_EVERY
    await controller.check_once()
    assert worker.names("compute") == 2


async def test_a_round_is_decided_on_a_fresh_solve(
    world: ControllerState, worker: WorkerThreads
) -> None:
    """Over-use seen on the last solved results, gone in the state of now: nobody is evicted."""
    now = [100.0]
    controller = checker(world, now)
    rounds: list[str] = []

    async def record(result: Any, victims: Any, spared: str) -> None:
        rounds.append(result.name)

    controller._rounds.revoke = record  # type: ignore[method-assign]
    await controller.check_once()  # greedy's over-use starts
    world.on_pod_deleted(running("greedy-b", "greedy", "1"))  # greedy fits, not solved yet
    now[0] = 131.0  # the delay has passed
    controller._solved_at = now[0]  # its periodic solve not due: it judges the last results
    await controller.check_once()
    assert rounds == []
    assert worker.names("compute") == 2  # the first check's, and the fresh one before the round


async def test_a_check_yields_to_the_event_loop_between_quotas_once_its_slice_is_spent(
    world: ControllerState,
) -> None:
    """A mass over-use (a node pool lost) must not hold the loop for the whole check: with a
    budget of 0 the second check (no solve of its own, no record to write) yields before each
    over-used quota but the first."""
    for index in range(5):
        world.on_quota(quota(f"over{index}", "1"))
        world.on_pod(running(f"over{index}-a", f"over{index}", "2"))
    now = [100.0]
    controller = checker(world, now, slice_budget=0.0)
    await controller.check_once()  # solves, starts the timers and writes their records
    turns = [0]

    async def count_turns() -> None:
        while True:
            await asyncio.sleep(0)
            turns[0] += 1

    ticker = asyncio.create_task(count_turns())
    await asyncio.sleep(0)
    now[0] += 1
    before = turns[0]
    await controller.check_once()
    ticker.cancel()
    assert set(controller._timer.since) == {"greedy", *(f"over{index}" for index in range(5))}
    assert turns[0] - before >= 6  # greedy, leaving and the five: a yield before all but one
