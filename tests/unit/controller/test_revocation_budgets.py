"""A revocation round around the pods a PodDisruptionBudget keeps (``revocation_around_budgets``).

Off (the default, the reference's rule): the kept victim is told so and the quota stays over its
runtime until a later round's eviction of it goes through. On: the round chooses again without
the kept pod, so the quota's other pods give the resources back in the same round; those already
evicted are chosen again first (they still run in memory until their deletion is seen) and are
not evicted twice.

Quota ``team`` has 4 cpu (min = max, it lends nothing) and 2-cpu pods of priorities 9
(``keep``), 5 (``mid``) and 0 (``low-a``, ``low-b``).
"""

from __future__ import annotations

import pytest
from fake_cluster import FakeCluster
from revocation_rounds import delayed_round
from team_pods import team_of_four, team_pod

from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import POD_LABEL_PREEMPTIBLE
from elasticquota.kube.evictions import EvictionOutcome

DELAY = 30.0
BLOCKED, EVICTED = EvictionOutcome.BLOCKED, EvictionOutcome.EVICTED


def team_with(*pods: tuple[str, int]) -> ControllerState:
    """Quota ``team`` (4 cpu) with running 2-cpu ``(name, priority)`` pods."""
    state = team_of_four()
    for name, priority in pods:
        state.on_pod(team_pod(name, "2", priority, node="n1"))
    return state


def blocked_messages(cluster: FakeCluster) -> list[tuple[str, str]]:
    return [
        (event["involvedObject"]["name"], event["message"])
        for event in cluster.events
        if event["reason"] == "RevocationBlocked"
    ]


async def test_by_default_a_kept_victim_leaves_the_quota_over_used_until_a_later_round(
    cluster: FakeCluster,
) -> None:
    world = team_with(("keep", 9), ("mid", 5), ("low-a", 0))  # used 6 > 4
    cluster.evictions_end(BLOCKED)
    await delayed_round(world, cluster, DELAY)
    assert cluster.named("evict") == ["low-a"]
    assert blocked_messages(cluster) == [
        (
            "low-a",
            "a PodDisruptionBudget refused the eviction for quota team's over-use; "
            "the next round tries again",
        )
    ]


async def test_around_budgets_the_next_pod_gives_back_what_the_kept_one_would_have(
    cluster: FakeCluster,
) -> None:
    world = team_with(("keep", 9), ("mid", 5), ("low-a", 0))  # used 6 > 4
    cluster.evictions_end(BLOCKED)
    await delayed_round(world, cluster, DELAY, revocation_around_budgets=True)
    assert cluster.named("evict") == ["low-a", "mid"]  # not keep: mid's 2 cpu are enough
    assert blocked_messages(cluster) == [
        (
            "low-a",
            "a PodDisruptionBudget refused the eviction for quota team's over-use; "
            "other pods of the quota are chosen instead",
        )
    ]
    revoked = [e["involvedObject"]["name"] for e in cluster.events if e["reason"] == "Revoked"]
    assert revoked == ["mid"]


async def test_around_budgets_a_victim_evicted_before_the_kept_one_is_not_evicted_twice(
    cluster: FakeCluster,
) -> None:
    """Victims low-b then low-a (the most important first; equal priorities: by name); a budget
    keeps low-a. The choice again, without it, is mid and low-b, which still runs in memory:
    only mid goes."""
    world = team_with(("keep", 9), ("mid", 5), ("low-a", 0), ("low-b", 0))  # used 8
    cluster.evictions_end(EVICTED, BLOCKED)
    await delayed_round(world, cluster, DELAY, revocation_around_budgets=True)
    assert cluster.named("evict") == ["low-b", "low-a", "mid"]


async def test_around_budgets_a_round_ends_when_no_other_pod_may_go(
    cluster: FakeCluster,
) -> None:
    world = team_with(("low-a", 0))
    keep = team_pod("keep", "4", 9, node="n1")  # within min: used 6 > 4
    keep["metadata"]["labels"][POD_LABEL_PREEMPTIBLE] = "false"
    world.on_pod(keep)
    cluster.evictions_end(BLOCKED)
    await delayed_round(world, cluster, DELAY, revocation_around_budgets=True)
    assert cluster.named("evict") == ["low-a"]  # keep is non-preemptible: nothing else to try


@pytest.mark.parametrize("outcome", [EVICTED, EvictionOutcome.GONE])
async def test_around_budgets_changes_nothing_when_the_victims_go(
    cluster: FakeCluster, outcome: EvictionOutcome
) -> None:
    world = team_with(("keep", 9), ("mid", 5), ("low-a", 0))
    cluster.evictions_end(outcome)
    await delayed_round(world, cluster, DELAY, revocation_around_budgets=True)
    assert cluster.named("evict") == ["low-a"]
