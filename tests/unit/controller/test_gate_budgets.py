"""In-quota preemption around the victims a PodDisruptionBudget keeps (its eviction answers 429).

The kept victim is told why (``PreemptionBlocked``) and spared: the victims are chosen again
without it in the same round, those already evicted are not sent twice, and where no other set
makes room the preemption stops; the kept pod is not asked again before ``BUDGET_RETRY``.
"""

from __future__ import annotations

import asyncio

import pytest
from fake_cluster import FakeCluster
from gate_rounds import new_needs_both_small_pods, stepped
from team_pods import team_of_four
from team_pods import team_pod as pod

from elasticquota.controller.enforcement.preemption import BUDGET_RETRY
from elasticquota.controller.state import ControllerState
from elasticquota.kube.evictions import EvictionOutcome


@pytest.fixture
def world() -> ControllerState:
    return team_of_four()


def blocked_events(cluster: FakeCluster) -> list[tuple[str, str]]:
    """The ``PreemptionBlocked`` Events posted: the victim named and the message."""
    return [
        (event["involvedObject"]["name"], event["message"])
        for event in cluster.events
        if event["reason"] == "PreemptionBlocked"
    ]


BLOCKED_FOR_NEW = "a PodDisruptionBudget refused the eviction to make room for ns/new"


async def test_a_victim_a_budget_keeps_is_told_and_spared_and_others_make_the_room(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``new`` needs both small pods gone; a PodDisruptionBudget refuses ``low-a``'s eviction
    (429): ``low-a`` is told why and spared, and ``mid`` makes the room instead, in the same
    round (as Kubernetes' preemption reprieves the victims a budget protects)."""
    cluster.evictions_end(EvictionOutcome.BLOCKED)
    gate = await stepped(world, cluster, *new_needs_both_small_pods())
    assert cluster.named("evict") == ["low-a", "mid"]
    assert list(gate.preempted) == ["ns/mid"]
    assert blocked_events(cluster) == [("low-a", BLOCKED_FOR_NEW)]


async def test_a_victim_evicted_before_one_a_budget_keeps_is_not_evicted_twice(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``low-a`` is evicted, ``low-b`` kept: the choice made again without ``low-b`` walks
    ``low-a`` (going already) then ``mid``, which alone makes the room: only ``mid`` is sent."""
    cluster.evictions_end(EvictionOutcome.EVICTED, EvictionOutcome.BLOCKED)
    gate = await stepped(world, cluster, *new_needs_both_small_pods())
    assert cluster.named("evict") == ["low-a", "low-b", "mid"]
    assert list(gate.preempted) == ["ns/low-a", "ns/mid"]
    assert blocked_events(cluster) == [("low-b", BLOCKED_FOR_NEW)]


async def test_a_victim_a_budget_keeps_ends_the_preemption_where_no_other_set_makes_room(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Without ``low-a`` (kept), ``low-b`` alone makes no room (``peer`` is of ``new``'s
    priority): ``low-b`` is left running, and ``low-a`` is told why."""
    cluster.evictions_end(EvictionOutcome.BLOCKED)
    gate = await stepped(
        world,
        cluster,
        pod("low-a", "1", 0, node="n1"),
        pod("low-b", "1", 0, node="n1"),
        pod("peer", "2", 5, node="n1"),
        pod("new", "2", 5, gated=True),
    )
    assert cluster.named("evict") == ["low-a"]
    assert list(gate.preempted) == []
    assert blocked_events(cluster) == [("low-a", BLOCKED_FOR_NEW)]


@pytest.mark.looptime
async def test_a_victim_a_budget_kept_is_not_asked_again_before_the_retry_time(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Where nothing else makes room, the kept ``low`` is spared for ``BUDGET_RETRY`` seconds:
    the rounds of every second meanwhile send nothing (they asked again each second, a refusal
    a second taken from the eviction rate); after it, it is asked again, and goes."""
    cluster.evictions_end(EvictionOutcome.BLOCKED)
    gate = await stepped(
        world, cluster, pod("low", "4", 0, node="n1"), pod("new", "2", 5, gated=True)
    )
    for _ in range(int(BUDGET_RETRY) - 1):
        await asyncio.sleep(1)
        await gate.step()
    assert cluster.named("evict") == ["low"]
    await asyncio.sleep(1.5)
    await gate.step()
    assert cluster.named("evict") == ["low", "low"]
    assert list(gate.preempted) == ["ns/low"]
