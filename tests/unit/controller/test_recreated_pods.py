"""A pod deleted and recreated under the same name (a StatefulSet's) between a decision and the
write that acts on it: the write names the pod decided about by its creation time
(``PodInfo.created``), and the cluster (``FakeCluster``, as the adapter's checks) refuses it for
the other pod.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_cluster import FakeCluster
from team_pods import team_of_four, team_pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.settings import Settings


def created_at(body: dict[str, Any], created: str) -> dict[str, Any]:
    body["metadata"]["creationTimestamp"] = created
    return body


OLD = "2026-11-27T10:00:00Z"
LATER = "2026-11-27T10:05:00Z"
NEW_POD = "2026-11-27T10:06:00Z"


@pytest.fixture
def world() -> ControllerState:
    return team_of_four()


def gates(world: ControllerState, cluster: FakeCluster) -> GateController:
    return GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))


async def test_a_pod_recreated_under_the_name_is_not_released_for_the_old_one(
    world: ControllerState, cluster: FakeCluster
) -> None:
    world.on_pod(created_at(team_pod("web-0", "2", 5, gated=True), OLD))
    cluster.store(created_at(team_pod("web-0", "2", 5, gated=True), LATER))
    gate = gates(world, cluster)
    await gate.step()
    assert ("set_scheduling_gates", "ns", "web-0", OLD) in cluster.created
    assert list(gate.released) == []
    assert "set_waiting_condition" not in cluster.verbs()


async def test_a_held_pod_recreated_under_the_name_is_told_as_the_new_pod(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The waiting condition meant for the old pod reaches no other pod, nor does its Event; the
    new pod is told at the round that decides about it, for the same reason too."""
    world.on_pod(created_at(team_pod("busy", "4", 10, node="n1"), OLD))
    world.on_pod(created_at(team_pod("web-0", "2", 5, gated=True), OLD))
    cluster.store(created_at(team_pod("web-0", "2", 5, gated=True), LATER))
    gate = gates(world, cluster)
    await gate.step()
    assert ("set_waiting_condition", "ns", "web-0", OLD) in cluster.created
    assert cluster.events == []
    world.on_pod(created_at(team_pod("web-0", "2", 5, gated=True), LATER))
    await gate.step()
    assert ("set_waiting_condition", "ns", "web-0", LATER) in cluster.created
    assert [event["reason"] for event in cluster.events] == ["WaitingForQuota"]


async def test_the_waiting_event_names_the_uid_of_the_pod_told(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``kubectl describe pod`` lists the Events whose involvedObject has the pod's uid (its field
    selector names it): the WaitingForQuota Event carries the uid of the pod the condition was
    written to."""
    world.on_pod(created_at(team_pod("busy", "4", 10, node="n1"), OLD))
    world.on_pod(created_at(team_pod("web-0", "2", 5, gated=True), OLD))
    stored = created_at(team_pod("web-0", "2", 5, gated=True), OLD)
    stored["metadata"]["uid"] = "uid-web-0"
    cluster.store(stored)
    await gates(world, cluster).step()
    (event,) = cluster.events
    involved = event["involvedObject"]
    assert (event["reason"], involved["kind"], involved["name"]) == (
        "WaitingForQuota",
        "Pod",
        "web-0",
    )
    assert involved["uid"] == "uid-web-0"


async def test_a_victim_recreated_under_the_name_is_not_evicted(
    world: ControllerState, cluster: FakeCluster
) -> None:
    world.on_pod(created_at(team_pod("low", "4", 0, node="n1"), OLD))
    world.on_pod(created_at(team_pod("new", "2", 5, gated=True), NEW_POD))
    cluster.store(created_at(team_pod("low", "4", 0, node="n1"), LATER))
    gate = gates(world, cluster)
    await gate.step()
    assert ("evict", "ns", "low", OLD) in cluster.created
    assert list(gate.preempted) == []
    assert ("ns", "low") in cluster.pods  # the other pod stays


def test_the_fake_cluster_refuses_another_pod_as_the_api_server_does() -> None:
    """The fake's side of the contract, which the tests above rely on."""
    cluster = FakeCluster()
    cluster.store(created_at(team_pod("web-0", "1"), LATER))

    async def writes() -> tuple[Any, ...]:
        return (
            await cluster.set_scheduling_gates("ns", "web-0", [], OLD),
            await cluster.set_scheduling_gates("ns", "web-0", [], LATER),
            await cluster.set_waiting_condition("ns", "web-0", True, "no room", OLD),
            await cluster.set_waiting_condition("ns", "web-0", True, "no room", LATER),
            await cluster.evict("ns", "web-0", OLD),
            await cluster.evict("ns", "web-0", LATER),
        )

    assert asyncio.run(writes()) == (
        False,
        True,
        None,
        "",
        EvictionResult(EvictionOutcome.GONE),
        EvictionResult(EvictionOutcome.EVICTED),
    )
