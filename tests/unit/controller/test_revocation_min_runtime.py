"""The live round with ``revocation_min_runtime``: young pods stay, the Event names them, and the
quota's next round comes when the first may go, not a whole delay later.

Quota ``team`` has 4 cpu (min = max); its pods ask for 2 each. The controller's clock is epoch
seconds from 1000; pods started at 0 are old, one started at 990 is young (minimum 60 s: it may
go at 1050).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fake_cluster import FakeCluster
from team_pods import team_of_four, team_pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.overuse import format_since
from elasticquota.core.keys import ANNO_REVOCATION_MIN_RUNTIME, LABEL_ALLOW_LENT
from elasticquota.settings import Settings

DELAY = 30.0
START = 1000.0


def team_with(*pods: tuple[str, int, float]) -> ControllerState:
    """Quota ``team`` with running 2-cpu ``(name, priority, start time)`` pods."""
    state = team_of_four()
    for name, priority, started in pods:
        body = team_pod(name, "2", priority, node="n1")
        body["status"]["startTime"] = format_since(started)
        state.on_pod(body)
    return state


class Rounds:
    """A revocation controller over ``world`` on a clock the test moves."""

    def __init__(self, world: ControllerState, cluster: FakeCluster, **overrides: Any) -> None:
        self.now = START
        settings = Settings(revocation_delay=DELAY, revocation_interval=1.0, **overrides)
        context = LoopContext(world, cluster, settings, asyncio.Event())
        self.controller = RevocationController(context, clock=lambda: self.now)

    async def check_at(self, now: float) -> None:
        self.now = now
        await self.controller.check_once()


def over_used_messages(cluster: FakeCluster) -> list[str]:
    return [event["message"] for event in cluster.events if event["reason"] == "QuotaOverUsed"]


async def test_an_older_pod_of_the_same_priority_goes_and_the_event_names_the_young_one(
    cluster: FakeCluster,
) -> None:
    world = team_with(("keep", 9, 0.0), ("old", 0, 0.0), ("young", 0, 990.0))  # used 6 > 4
    rounds = Rounds(world, cluster, revocation_min_runtime=60.0)
    await rounds.check_at(START)
    await rounds.check_at(START + DELAY + 1)
    assert cluster.named("evict") == ["old"]
    (message,) = over_used_messages(cluster)
    assert message.endswith(
        "evicting: ns/old; spared until they have run 60s: ns/young (until 1970-01-01T00:17:30Z)"
    )


async def test_without_a_minimum_the_young_pod_goes_as_in_the_reference(
    cluster: FakeCluster,
) -> None:
    world = team_with(("keep", 9, 0.0), ("old", 0, 0.0), ("young", 0, 990.0))
    rounds = Rounds(world, cluster)
    await rounds.check_at(START)
    await rounds.check_at(START + DELAY + 1)
    assert cluster.named("evict") == ["young"]


async def test_the_next_round_comes_when_the_spared_pod_may_go(cluster: FakeCluster) -> None:
    """keep and mid are more important than young: the first round evicts nothing; the next
    comes at 1050 (young's 60 s), not at 1062 (another delay after the round at 1031)."""
    world = team_with(("keep", 9, 0.0), ("mid", 5, 0.0), ("young", 0, 990.0))
    rounds = Rounds(world, cluster, revocation_min_runtime=60.0)
    await rounds.check_at(START)
    await rounds.check_at(START + DELAY + 1)
    assert cluster.named("evict") == []
    assert (
        "evicting: none evictable; spared until they have run 60s: ns/young"
        in (over_used_messages(cluster)[0])
    )
    await rounds.check_at(1050.0)
    assert cluster.named("evict") == []  # due strictly after 1050, as after a delay
    await rounds.check_at(1050.5)
    assert cluster.named("evict") == ["young"]


def annotate_team(world: ControllerState, min_runtime: str) -> None:
    """Quota ``team`` as ``team_of_four`` makes it, with a ``revocation-min-runtime``."""
    world.on_quota(
        {
            "metadata": {
                "name": "team", "namespace": "ns", "labels": {LABEL_ALLOW_LENT: "false"},
                "annotations": {ANNO_REVOCATION_MIN_RUNTIME: min_runtime},
            },
            "spec": {"min": {"cpu": "4"}, "max": {"cpu": "4"}},
        }
    )  # fmt: skip


async def test_a_quota_annotation_sets_the_minimum_for_its_pods(cluster: FakeCluster) -> None:
    """The setting is 0 (the reference's rule); the quota asks for 1m: as the setting at 60."""
    world = team_with(("keep", 9, 0.0), ("old", 0, 0.0), ("young", 0, 990.0))
    annotate_team(world, "1m")
    rounds = Rounds(world, cluster)
    await rounds.check_at(START)
    await rounds.check_at(START + DELAY + 1)
    assert cluster.named("evict") == ["old"]
    assert over_used_messages(cluster)[0].endswith(
        "spared until they have run 60s: ns/young (until 1970-01-01T00:17:30Z)"
    )


async def test_a_quota_annotation_of_0_turns_the_operators_minimum_off(
    cluster: FakeCluster,
) -> None:
    world = team_with(("keep", 9, 0.0), ("old", 0, 0.0), ("young", 0, 990.0))
    annotate_team(world, "0")
    rounds = Rounds(world, cluster, revocation_min_runtime=60.0)
    await rounds.check_at(START)
    await rounds.check_at(START + DELAY + 1)
    assert cluster.named("evict") == ["young"]
