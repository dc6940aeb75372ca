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
from gate_rounds import new_needs_both_small_pods, stepped
from kubernetes_asyncio.client.exceptions import ApiException
from team_pods import team_of_four
from team_pods import team_pod as pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import (
    ANNO_USER_INFO,
    ANNO_USER_LIMITS,
    LABEL_ALLOW_LENT,
)
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.kube.fence import NotLeadingError
from elasticquota.settings import Settings


@pytest.fixture
def world() -> ControllerState:
    return team_of_four()


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
