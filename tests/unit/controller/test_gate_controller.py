"""The gate controller: release what fits, tell the rest why, preempt within the quota.

The controller writes to the in-memory cluster; the decisions come from the real engine.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from fake_cluster import FakeCluster
from kubernetes_asyncio.client.exceptions import ApiException
from team_pods import team_of_four
from team_pods import team_pod as pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import BUDGET_RETRY, GateController
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import (
    ANNO_USER_INFO,
    ANNO_USER_LIMITS,
    LABEL_ALLOW_LENT,
)
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.kube.lease import NotLeadingError
from elasticquota.settings import Settings


@pytest.fixture
def world() -> ControllerState:
    return team_of_four()


async def stepped(
    world: ControllerState, cluster: FakeCluster, *pods: dict[str, Any]
) -> GateController:
    """A gate controller after one round over ``world`` and these pods."""
    for body in pods:
        world.on_pod(body)
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))
    await gate.step()
    return gate


async def test_a_pod_that_fits_loses_the_gate(world: ControllerState, cluster: FakeCluster) -> None:
    gate = await stepped(world, cluster, pod("new", "2", 5, gated=True))
    assert ("set_scheduling_gates", "ns", "new", []) in cluster.calls
    assert list(gate.released) == ["ns/new"]


async def test_a_waiting_pod_is_told_why_once_and_lower_priority_pods_of_its_quota_make_room(
    world: ControllerState, cluster: FakeCluster
) -> None:
    gate = await stepped(
        world, cluster, pod("low", "4", 0, node="n1"), pod("new", "2", 5, gated=True)
    )
    assert cluster.verbs().count("set_waiting_condition") == 1
    assert cluster.named("evict") == ["low"]
    assert list(gate.preempted) == ["ns/low"] and list(gate.released) == []
    condition = next(body for verb, *_, body in cluster.calls if verb == "set_waiting_condition")
    reason = "quota team: cpu used 4 + request 2 > runtime 4"
    assert condition == {"waiting": True, "message": reason}


async def test_no_preemption_of_equal_or_higher_priority_pods(
    world: ControllerState, cluster: FakeCluster
) -> None:
    gate = await stepped(
        world, cluster, pod("peer", "4", 5, node="n1"), pod("new", "2", 5, gated=True)
    )
    await gate.step()  # told once only
    assert cluster.named("evict") == []
    assert cluster.verbs().count("set_waiting_condition") == 1


def new_needs_both_small_pods() -> list[dict[str, Any]]:
    """``new`` (priority 5) waits; only ``low-a`` and ``low-b`` gone together make its room."""
    return [
        pod("low-a", "1", 0, node="n1"),
        pod("low-b", "1", 0, node="n1"),
        pod("mid", "2", 0, node="n1"),
        pod("new", "2", 5, gated=True),
    ]


async def test_a_preemption_an_eviction_error_cut_short_is_the_quotas_one_this_round(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``new`` needs both small pods gone: ``low-a`` is evicted, ``low-b``'s eviction fails.
    ``next`` waits in the same quota, but the round's snapshot does not know ``low-a`` is going:
    it would choose ``low-a`` again (an eviction of a terminating pod). The next round decides
    on what the evictions left."""
    cluster.refused.add("low-b")
    gate = await stepped(
        world, cluster, *new_needs_both_small_pods(), pod("next", "2", 5, gated=True)
    )
    assert cluster.named("evict") == ["low-a", "low-b"]
    assert list(gate.preempted) == ["ns/low-a"]


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


async def test_a_refused_preemption_eviction_is_told_on_the_victim_and_logged_at_each_round(
    world: ControllerState, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The API server refuses ``low``'s eviction (403, not a budget) at two rounds: each logs
    the victim and the pod it was making room for, counts it ``failed``, and posts the same
    Warning on ``low`` (one Event whose count grows, ``kube.events``); ``new`` keeps waiting."""
    cluster.fail("evict", *(ApiException(status=403, reason="Forbidden") for _ in range(2)))
    metrics = Metrics()
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event(), metrics))
    world.on_pod(pod("low", "4", 0, node="n1"))
    world.on_pod(pod("new", "2", 5, gated=True))
    with caplog.at_level(logging.WARNING, logger=gate.__module__):
        await gate.step()
        await gate.step()
    line = "in-quota preemption's evictions failed for ns/low (making room for ns/new)"
    assert [record.getMessage() for record in caplog.records] == [
        f"{line}: HTTP 403: Forbidden"
    ] * 2
    failed = [event for event in cluster.events if event["reason"] == "PreemptionFailed"]
    message = "the eviction to make room in its quota for ns/new failed: HTTP 403: Forbidden"
    assert [(event["type"], event["message"]) for event in failed] == [("Warning", message)] * 2
    assert failed[0]["involvedObject"] == failed[1]["involvedObject"]
    evictions = {"quota": "team", "reason": "preemption", "result": "failed"}
    assert metrics.registry.get_sample_value("elastic_quota_evictions_total", evictions) == 2
    assert list(gate.preempted) == [] and list(gate.released) == []


async def test_a_preemption_eviction_the_fence_refuses_ends_the_round_and_tells_nothing(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Nothing was sent: no ``PreemptionFailed`` (it would be refused too), no ``failed`` count,
    and the round's end (the gated-pods gauge) is not reached."""
    cluster.fail("evict", NotLeadingError("not sent"))
    metrics = Metrics()
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event(), metrics))
    world.on_pod(pod("low", "4", 0, node="n1"))
    world.on_pod(pod("new", "2", 5, gated=True))
    await gate.step()
    assert cluster.verbs()[-1] == "evict" and cluster.events[-1]["reason"] == "WaitingForQuota"
    evictions = {"quota": "team", "reason": "preemption", "result": "failed"}
    assert metrics.registry.get_sample_value("elastic_quota_evictions_total", evictions) is None
    assert world.gated == {}


async def test_a_round_releases_before_its_preemption_evictions(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``high`` waits and preempts ``low``; ``small`` fits now. An eviction waits for the
    eviction rate, during which a pod of the quota can start (here: as ``low``'s eviction is
    answered): ``small``'s release goes out first, while the figures it was decided on hold."""
    evict = cluster.evict

    async def evict_while_another_pod_starts(namespace: str, name: str, created: str = "") -> Any:
        world.on_pod(pod("other", "1", 0, node="n1"))  # 3 + 1 of 4: no room for small any more
        return await evict(namespace, name, created)

    cluster.evict = evict_while_another_pod_starts  # type: ignore[method-assign]
    gate = await stepped(
        world,
        cluster,
        pod("low", "3", 0, node="n1"),
        pod("high", "2", 5, gated=True),
        pod("small", "1", 0, gated=True),
    )
    acts = [verb for verb in cluster.verbs() if verb in ("evict", "set_scheduling_gates")]
    assert acts == ["set_scheduling_gates", "evict"]
    assert list(gate.released) == ["ns/small"] and list(gate.preempted) == ["ns/low"]


async def test_a_round_ends_at_the_first_write_the_fence_refuses(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The Lease was lost mid-round: the other pods are not tried (each would be refused too)."""
    cluster.fail("set_scheduling_gates", *(NotLeadingError("not sent") for _ in range(3)))
    gate = await stepped(world, cluster, *(pod(name, "1", 5, gated=True) for name in "abc"))
    assert cluster.verbs() == ["set_scheduling_gates"]
    assert list(gate.released) == []


async def test_a_release_is_counted_even_when_its_condition_cannot_be_written(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The gate is gone, so the pod is admitted (the next round has no decision about it to count
    it by); the condition's failure is the round's to log. The Lease lost after the release
    does not undo it either."""
    cluster.fail("set_waiting_condition", ApiException(status=500), NotLeadingError("not sent"))
    gate = await stepped(world, cluster, pod("a", "1", 5, gated=True), pod("b", "1", 5, gated=True))
    assert cluster.named("set_scheduling_gates") == ["a", "b"]
    assert list(gate.released) == ["ns/a", "ns/b"]


async def test_an_admitted_condition_that_could_not_be_written_is_written_at_the_next_round(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Else the released pod keeps the "waits" condition of its last hold once it runs."""
    cluster.fail("set_waiting_condition", ApiException(status=500))
    gate = await stepped(world, cluster, pod("a", "1", 5, gated=True))
    world.on_pod(pod("a", "1", 5, node="n1"))  # the release seen, the pod bound
    await gate.step()
    await gate.step()  # nothing owed any more
    written = [call for call in cluster.calls if call[0] == "set_waiting_condition"]
    assert [(name, body["waiting"]) for _, _, name, body in written] == [("a", False)] * 2


async def test_a_pod_gone_before_its_condition_is_owed_nothing(
    world: ControllerState, cluster: FakeCluster
) -> None:
    cluster.fail("set_waiting_condition", ApiException(status=500))
    gate = await stepped(world, cluster, pod("a", "1", 5, gated=True))
    world.on_pod(pod("a", "1", 5, gated=True), deleted=True)
    await gate.step()
    assert cluster.named("set_waiting_condition") == ["a"]


async def test_held_pods_are_counted_per_quota_and_reason(cluster: FakeCluster) -> None:
    """A user limit, a group limit and the quota itself each hold one pod back: the gated-pods
    gauge tells them apart (``reason``), so that an alert can watch the limits alone."""
    state = ControllerState.create(EngineSettings())
    limits = [
        {"users": ["sue"], "maxresources": {"cpu": "1"}},
        {"groups": ["dev"], "maxresources": {"cpu": "1"}},
    ]
    state.on_quota(
        {
            "metadata": {
                "name": "team",
                "namespace": "ns",
                "labels": {LABEL_ALLOW_LENT: "false"},
                "annotations": {ANNO_USER_LIMITS: json.dumps(limits)},
            },
            "spec": {"min": {"cpu": "4"}, "max": {"cpu": "4"}},
        }
    )
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    state.mark_synced()

    def of(body: dict[str, Any], user: str, groups: list[str]) -> dict[str, Any]:
        info = json.dumps({"user": user, "groups": groups})
        body["metadata"]["annotations"] = {ANNO_USER_INFO: info}
        return body

    await stepped(
        state,
        cluster,
        of(pod("sue-running", "1", 5, node="n1"), "sue", []),
        of(pod("bob-running", "1", 5, node="n1"), "bob", ["dev"]),
        of(pod("sue-new", "500m", 5, gated=True), "sue", []),
        of(pod("bob-new", "500m", 5, gated=True), "bob", ["dev"]),
        of(pod("carol-new", "3", 5, gated=True), "carol", []),
    )

    assert state.gated == {
        ("team", "user-limit"): 1,
        ("team", "group-limit"): 1,
        ("team", "quota"): 1,
    }


async def test_a_gate_update_outage_is_not_ended_in_the_log_by_a_round_that_sent_nothing(
    world: ControllerState, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """``new`` waits; telling it why fails (a 503). Its preemption check finds no victim and
    sends nothing: that is no request going through, so the log keeps the outage open until the
    next round's condition goes through."""
    cluster.fail("set_waiting_condition", ApiException(status=503, reason="Service Unavailable"))
    with caplog.at_level(logging.INFO, logger=GateController.__module__):
        gate = await stepped(
            world, cluster, pod("peer", "4", 5, node="n1"), pod("new", "2", 5, gated=True)
        )
        logged = [record.getMessage() for record in caplog.records]
        await gate.step()
    assert logged == ["gate updates failing (ns/new: HTTP 503: Service Unavailable); retrying"]
    assert caplog.records[-1].getMessage().startswith("gate updates succeed again after ")


def refuse_events_on(cluster: FakeCluster, name: str, error: Exception) -> None:
    """Every Event about the pod ``name`` fails with ``error``; the others are posted."""
    post_event = cluster.post_event

    async def refusing(involved: dict[str, str], *args: Any) -> None:
        if involved["name"] == name:
            raise error
        await post_event(involved, *args)

    cluster.post_event = refusing  # type: ignore[method-assign]  # this test's own fake


@pytest.mark.parametrize("outcome", [EvictionOutcome.EVICTED, EvictionOutcome.BLOCKED, None])
async def test_a_victims_event_that_fails_is_logged_with_the_victim(
    world: ControllerState,
    cluster: FakeCluster,
    caplog: pytest.LogCaptureFixture,
    outcome: EvictionOutcome | None,
) -> None:
    """The Event on ``low`` (PreemptedInQuota, PreemptionBlocked, or PreemptionFailed after a
    403) cannot be posted: the log names ``low`` and the Event, not ``new``, the pod waiting."""
    if outcome is None:
        cluster.fail("evict", ApiException(status=403, reason="Forbidden"))
    else:
        cluster.evictions_end(outcome)
    refuse_events_on(cluster, "low", ApiException(status=403, reason="Forbidden"))
    with caplog.at_level(logging.WARNING, logger=GateController.__module__):
        await stepped(world, cluster, pod("low", "4", 0, node="n1"), pod("new", "2", 5, gated=True))
    reason = {
        EvictionOutcome.EVICTED: "PreemptedInQuota",
        EvictionOutcome.BLOCKED: "PreemptionBlocked",
        None: "PreemptionFailed",
    }[outcome]
    assert [record.getMessage() for record in caplog.records][-1] == (
        f"gate updates failed for the {reason} Event on ns/low: HTTP 403: Forbidden"
    )


async def test_a_victims_event_that_fails_does_not_stop_the_preemption(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """``new`` needs both small pods gone; the ``PreemptedInQuota`` Event on ``low-a`` cannot be
    posted: ``low-b`` is evicted all the same (stopping there would leave ``low-a`` evicted for
    no room)."""
    refuse_events_on(cluster, "low-a", ApiException(status=429, reason="Too Many Requests"))
    gate = await stepped(world, cluster, *new_needs_both_small_pods())
    assert cluster.named("evict") == ["low-a", "low-b"]
    assert list(gate.preempted) == ["ns/low-a", "ns/low-b"]
