"""In-quota preemption's minimum runtime in the gate controller: a young lower-priority pod is
not evicted; the waiting pod is told once (``PreemptionDeferred``) which pods it waits for and
until when, and the first round after that preempts. The quota's ``preemption-min-runtime``
annotation overrides the setting."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from fake_cluster import FakeCluster
from team_pods import team_of_four, team_quota
from team_pods import team_pod as pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import ANNO_PREEMPTION_MIN_RUNTIME
from elasticquota.settings import Settings

STARTED = "2026-11-28T12:00:00Z"
START = datetime(2026, 11, 28, 12, tzinfo=UTC).timestamp()


class Clock:
    """Wall-clock epoch seconds that a test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def gate_over(
    world: ControllerState, cluster: FakeCluster, clock: Clock, **settings: Any
) -> GateController:
    """A gate controller over ``world`` with these settings, on ``clock``."""
    context = LoopContext(world, cluster, Settings(**settings), asyncio.Event())
    return GateController(context, clock=clock)


@pytest.fixture
def world() -> ControllerState:
    """``low`` (priority 0, 4 cpu, started at ``STARTED``) fills quota ``team``; ``new``
    (priority 5, 2 cpu) waits at the gate."""
    state = team_of_four()
    state.on_pod(pod("low", "4", 0, node="n1", started=STARTED))
    state.on_pod(pod("new", "2", 5, gated=True))
    return state


def deferrals(cluster: FakeCluster) -> list[dict[str, Any]]:
    return [event for event in cluster.events if event["reason"] == "PreemptionDeferred"]


async def test_a_young_victim_waits_out_its_minimum_runtime_and_the_waiting_pod_is_told_once(
    world: ControllerState, cluster: FakeCluster
) -> None:
    clock = Clock(START + 100)
    gate = gate_over(world, cluster, clock, preemption_min_runtime=600)
    await gate.step()
    await gate.step()
    assert cluster.named("evict") == []
    [told] = deferrals(cluster)
    assert told["involvedObject"]["name"] == "new" and told["type"] == "Normal"
    assert told["message"] == (
        "in-quota preemption waits for the minimum runtime (600 s) of ns/low: "
        "they may go from 2026-11-28T12:10:00Z"
    )
    clock.now = START + 600
    await gate.step()
    assert cluster.named("evict") == ["low"] and list(gate.preempted) == ["ns/low"]
    assert len(deferrals(cluster)) == 1


async def test_without_a_minimum_runtime_the_young_pod_goes_at_once(
    world: ControllerState, cluster: FakeCluster
) -> None:
    gate = gate_over(world, cluster, Clock(START + 100))
    await gate.step()
    assert cluster.named("evict") == ["low"] and deferrals(cluster) == []


@pytest.mark.parametrize(("annotation", "evicted"), [("10m", []), ("0", ["low"])])
async def test_the_quotas_annotation_overrides_the_setting(
    world: ControllerState, cluster: FakeCluster, annotation: str, evicted: list[str]
) -> None:
    world.on_quota(team_quota(annotations={ANNO_PREEMPTION_MIN_RUNTIME: annotation}))
    setting = 0 if annotation == "10m" else 3600
    gate = gate_over(world, cluster, Clock(START + 100), preemption_min_runtime=setting)
    await gate.step()
    assert cluster.named("evict") == evicted
