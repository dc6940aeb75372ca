"""The gate controller with user limits: a pod held back by its user's limit is released as soon
as another pod of the same user finishes or is deleted (the limit is checked again every round
against the ledger the pod events keep), and a user-limit refusal never triggers in-quota
preemption (as YuniKorn: evicting other pods could not lift the limit)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fake_cluster import FakeCluster
from team_pods import team_pod, team_quota

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import (
    ANNO_USER_INFO,
    ANNO_USER_LIMITS,
)
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.settings import Settings

SUE_LIMIT = '- limit: "specific user"\n  users: [sue]\n  maxresources: {cpu: 5}'


def pod(name: str, cpu: str, *, user: str = "sue", **shape: Any) -> dict[str, Any]:
    """A pod of quota ``team`` run by ``user`` (``shape``: ``team_pods.team_pod``'s options)."""
    info = json.dumps({"user": user, "groups": []})
    return team_pod(name, cpu, annotations={ANNO_USER_INFO: info}, **shape)


def world_with(quota_cpu: str) -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_quota(team_quota(quota_cpu, {ANNO_USER_LIMITS: SUE_LIMIT}))
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "100"}}})
    state.mark_synced()
    return state


@pytest.fixture
def world() -> ControllerState:
    return world_with("20")


async def held_then(
    world: ControllerState, cluster: FakeCluster, change: dict[str, Any] | None
) -> GateController:
    """sue runs 4 of her 5 cpu; her new 2-cpu pod is held; then ``change`` (None: delete)."""
    running = pod("a", "4", node="n1")
    world.on_pod(running)
    world.on_pod(pod("new", "2", gated=True))
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))
    await gate.step()
    assert list(gate.released) == []
    condition = next(body for verb, *_, body in cluster.calls if verb == "set_waiting_condition")
    assert condition == {
        "waiting": True,
        "message": "user sue at quota team: cpu: requested 2, used 4 of limit 5 "
        "(user limit specific user)",
    }
    if change is None:
        world.on_pod_deleted(running)
    else:
        world.on_pod(change)
    await gate.step()
    return gate


async def test_a_pod_held_by_its_user_limit_is_released_when_another_pod_of_the_user_finishes(
    world: ControllerState, cluster: FakeCluster
) -> None:
    gate = await held_then(world, cluster, pod("a", "4", node="n1", phase="Succeeded"))
    assert list(gate.released) == ["ns/new"]
    assert ("set_scheduling_gates", "ns", "new", []) in cluster.calls


async def test_a_pod_held_by_its_user_limit_is_released_when_another_pod_of_the_user_is_deleted(
    world: ControllerState, cluster: FakeCluster
) -> None:
    gate = await held_then(world, cluster, None)
    assert list(gate.released) == ["ns/new"]


async def test_another_users_pod_finishing_does_not_release_it(
    world: ControllerState, cluster: FakeCluster
) -> None:
    world.on_pod(pod("bob-1", "1", user="bob", node="n1"))
    gate = await held_then(world, cluster, pod("bob-1", "1", user="bob", phase="Succeeded"))
    assert list(gate.released) == []


async def test_a_user_limit_refusal_never_preempts_pods_of_the_quota(cluster: FakeCluster) -> None:
    """The quota is full too, with a lower-priority pod of bob: evicting it would make room in
    the quota, but sue's limit would still hold her pod, so nothing is evicted."""
    world = world_with("6")
    world.on_pod(pod("sue-1", "4", node="n1", priority=10))
    world.on_pod(pod("bob-1", "1", user="bob", node="n1", priority=0))
    world.on_pod(pod("new", "2", gated=True, priority=5))
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))
    await gate.step()
    assert cluster.named("evict") == []
    assert list(gate.preempted) == [] and list(gate.released) == []


async def test_a_pod_released_last_round_counts_while_memory_still_shows_it_gated(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The gate patch is answered before the watch brings the pod back without its gate: at the
    next round memory may still show it gated. It counts as released then (in flight), so a newer
    pod of a higher priority is not released beside it over sue's limit, and the first is neither
    released (and counted) again nor told that it waits."""
    world.on_pod(pod("a", "3", node="n1"))
    world.on_pod(pod("low", "2", gated=True))
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))
    await gate.step()
    assert list(gate.released) == ["ns/low"]
    world.on_pod(pod("high", "2", gated=True, priority=10))  # "low" still shows its gate
    await gate.step()
    assert list(gate.released) == ["ns/low"]
    told = [body for verb, _, name, body in cluster.calls if verb == "set_waiting_condition"]
    assert [item["waiting"] for item in told] == [False, True]  # low admitted, high waits
    assert "used 5 of limit 5" in told[1]["message"]
    assert [call[2] for call in cluster.calls if call[0] == "set_scheduling_gates"] == ["low"]
    world.on_pod(pod("low", "2"))  # the watch catches up: released, not bound yet
    await gate.step()
    assert list(gate.released) == ["ns/low"]
