"""Counters and histograms fed by the loops: tree passes, pod events, evictions, gating, webhooks.

Each test gives the controller its own ``Metrics`` (a fresh registry) and reads the samples back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import kopf
import pytest
from admission_reviews import POD_RESOURCE, QUOTA_RESOURCE, admission_review
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.names import EVICTION_RESULTS, FAILED
from elasticquota.controller.reconcile.reconciler import TreeLoop
from elasticquota.controller.reconcile.writer import Writer
from elasticquota.controller.runner import make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import MUTATE_POD, VALIDATE_POD, VALIDATE_QUOTA
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

DEFAULT_TREE = ""


@pytest.fixture
def world(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """One quota on one node, synced."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    body = cluster.store(k8s.quota("team", min={"cpu": "2"}, max={"cpu": "4"}))
    state.on_quota(body)
    state.mark_synced()
    return state


def tree_loop(
    state: ControllerState, cluster: FakeCluster, metrics: Metrics, interval: float
) -> TreeLoop:
    writer = Writer(cluster, state, Settings(identity="test", metrics_port=0))
    leading = asyncio.Event()
    leading.set()
    return TreeLoop(DEFAULT_TREE, state, writer, interval, leading, lambda: None, metrics)


def count(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def running_pod(k8s: Bodies, name: str, cpu: str) -> dict[str, Any]:
    return k8s.pod(name, quota="team", requests={"cpu": cpu}, node="n1", phase="Running")


# -- tree passes ----------------------------------------------------------------------------------


async def test_every_pass_is_timed_and_the_solve_only_when_the_tree_was_stale(
    world: ControllerState, cluster: FakeCluster
) -> None:
    metrics = Metrics()
    loop = tree_loop(world, cluster, metrics, interval=0.0)
    await loop.reconcile_once()
    await loop.reconcile_once()  # nothing changed: no solve
    assert count(metrics, "elastic_quota_reconcile_seconds_count") == 2
    assert count(metrics, "elastic_quota_solve_seconds_count", tree=DEFAULT_TREE) == 1
    assert world.results[DEFAULT_TREE]["team"].runtime == {"cpu": 0}


async def test_a_pod_event_is_timed_until_the_writes_that_show_it(
    world: ControllerState,
    cluster: FakeCluster,
    k8s: Bodies,
) -> None:
    metrics = Metrics()
    loop = tree_loop(world, cluster, metrics, interval=0.0)
    await loop.reconcile_once()
    assert world.pod_event_at == {}
    world.on_pod(running_pod(k8s, "p", "1"))
    assert DEFAULT_TREE in world.pod_event_at
    writes = len(cluster.writes())
    await loop.reconcile_once()
    assert len(cluster.writes()) > writes
    assert count(metrics, "elastic_quota_pod_event_to_write_seconds_count") == 1
    assert world.pod_event_at == {}


async def test_a_deferred_write_keeps_the_pod_event_clock_running(
    world: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    metrics = Metrics()
    loop = tree_loop(world, cluster, metrics, interval=60.0)
    await loop.reconcile_once()  # written now: the next write waits a minute
    world.on_pod(running_pod(k8s, "p", "1"))
    stamp = world.pod_event_at[DEFAULT_TREE]
    assert not await loop.reconcile_once()
    assert count(metrics, "elastic_quota_pod_event_to_write_seconds_count") == 0
    assert world.pod_event_at == {DEFAULT_TREE: stamp}


async def test_a_pod_event_with_nothing_to_write_is_not_timed(
    world: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    metrics = Metrics()
    loop = tree_loop(world, cluster, metrics, interval=0.0)
    await loop.reconcile_once()
    world.on_pod(k8s.pod("stray", "elsewhere", requests={"cpu": "1"}))  # the default quota's
    assert DEFAULT_TREE in world.pod_event_at
    await loop.reconcile_once()
    assert count(metrics, "elastic_quota_pod_event_to_write_seconds_count") == 0
    assert world.pod_event_at == {}


def test_only_pod_events_that_change_something_after_the_sync_start_the_clock(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("team", max={"cpu": "4"}))
    state.on_pod(running_pod(k8s, "early", "1"))
    assert state.pod_event_at == {}  # the initial listing
    state.mark_synced()
    state.engine.solve()
    state.on_pod(running_pod(k8s, "early", "1"))  # delivered again, unchanged
    assert state.pod_event_at == {}
    state.on_pod_deleted(running_pod(k8s, "early", "1"))
    assert list(state.pod_event_at) == [DEFAULT_TREE]


def test_the_engine_knows_the_tree_of_a_placed_pod(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("team", max={"cpu": "4"}))
    state.on_pod(running_pod(k8s, "p", "1"))
    assert state.engine.tree_of_pod("team/p") is None  # the quota awaits the topology rebuild
    state.engine.tree_ids()
    assert state.engine.tree_of_pod("team/p") == DEFAULT_TREE
    assert state.engine.tree_of_pod("team/nobody") is None


# -- evictions ------------------------------------------------------------------------------------


def test_eviction_results_are_the_outcomes_and_failed() -> None:
    """Every outcome of an eviction sent, and ``failed`` (a dry run's are not sent nor counted)."""
    sent = {outcome.value for outcome in EvictionOutcome if outcome is not EvictionOutcome.NOT_SENT}
    assert set(EVICTION_RESULTS) == sent | {FAILED}


@pytest.fixture
def over_used(cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """Quota team (max 2 cpu, lends nothing) holding 3 cpu in three pods."""
    state = ControllerState.create(EngineSettings())
    labels = {keys.LABEL_ALLOW_LENT: "false"}
    quota = k8s.quota("team", min={"cpu": "2"}, max={"cpu": "2"}, labels=labels)
    state.on_quota(cluster.store(quota))
    state.on_node(k8s.node("n1"))
    for name, priority in (("keep", 9), ("extra-1", 0), ("extra-2", 1)):
        body = running_pod(k8s, name, "1")
        body["spec"]["priority"] = priority
        state.on_pod(body)
    state.mark_synced()
    return state


async def test_revocation_counts_each_eviction_by_outcome(
    over_used: ControllerState, cluster: FakeCluster, leading: asyncio.Event
) -> None:
    metrics = Metrics()
    clock = iter([0.0, 10.0, 20.0])
    settings = Settings(identity="test", revocation_delay=1.0, eviction_rate=100.0)
    context = LoopContext(over_used, cluster, settings, leading, metrics)
    controller = RevocationController(context, clock=lambda: next(clock))
    cluster.evictions_end(EvictionOutcome.BLOCKED)
    await controller.check_once()  # the over-use starts
    await controller.check_once()  # a round: one victim, kept by its disruption budget
    cluster.fail("evict", ApiException(status=500))
    await controller.check_once()  # the next round: the API fails
    evictions = "elastic_quota_evictions_total"
    assert count(metrics, evictions, quota="team", reason="over-use", result="blocked") == 1
    assert count(metrics, evictions, quota="team", reason="over-use", result="failed") == 1
    assert count(metrics, evictions, quota="team", reason="preemption", result="blocked") == 0


# -- gating ---------------------------------------------------------------------------------------


def gated_pod(k8s: Bodies, name: str, cpu: str, priority: int) -> dict[str, Any]:
    body = k8s.pod(name, quota="team", requests={"cpu": cpu})
    body["spec"]["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    body["spec"]["priority"] = priority
    return body


async def test_gating_counts_admissions_gated_pods_and_preemptions(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, leading: asyncio.Event
) -> None:
    labels = {keys.LABEL_ALLOW_LENT: "false"}
    state.on_quota(k8s.quota("team", min={"cpu": "4"}, max={"cpu": "4"}, labels=labels))
    state.on_node(k8s.node("n1"))
    state.on_pod(gated_pod(k8s, "fits", "1", 5))
    low = running_pod(k8s, "low", "3")
    low["spec"]["priority"] = 0
    state.on_pod(low)
    state.on_pod(gated_pod(k8s, "waits", "2", 5))
    state.mark_synced()
    metrics = Metrics()
    metrics.watch(state, leading)
    gate = GateController(LoopContext(state, cluster, Settings(identity="test"), leading, metrics))
    await gate.step()
    assert list(gate.released) == ["team/fits"] and list(gate.preempted) == ["team/low"]
    assert count(metrics, "elastic_quota_admissions_total", quota="team", result="admitted") == 1
    assert count(metrics, "elastic_quota_gated_pods", quota="team", reason="quota") == 1
    evictions = "elastic_quota_evictions_total"
    assert count(metrics, evictions, quota="team", reason="preemption", result="evicted") == 1
    assert count(metrics, evictions, quota="team", reason="over-use", result="evicted") == 0


#: The pods' creation time in ``conftest.Bodies.pod``: when the mutating webhook gated them.
CREATED = datetime(2024, 1, 1, tzinfo=UTC).timestamp()


def admission_waits(metrics: Metrics, **labels: str) -> tuple[float, float]:
    """(how many pods, total seconds) of the admission-wait histogram for ``labels``."""
    name = "elastic_quota_admission_wait_seconds"
    return count(metrics, f"{name}_count", **labels), count(metrics, f"{name}_sum", **labels)


async def test_a_released_pod_s_wait_at_the_gate_is_measured_from_its_creation(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, leading: asyncio.Event
) -> None:
    """A new controller (a restart) knows nothing of the pod: its wait starts at the pod's
    creationTimestamp (when it got the gate), by the wall clock, per tree and quota; a pod still
    held is not measured."""
    state.on_quota(k8s.quota("team", min={"cpu": "2"}, max={"cpu": "2"}))
    state.on_node(k8s.node("n1"))
    state.on_pod(gated_pod(k8s, "fits", "1", 5))
    state.on_pod(gated_pod(k8s, "waits", "2", 5))
    state.mark_synced()
    metrics = Metrics()
    context = LoopContext(state, cluster, Settings(identity="test"), leading, metrics)
    gate = GateController(context, clock=lambda: CREATED + 95.0)
    await gate.step()
    assert list(gate.released) == ["team/fits"]
    assert admission_waits(metrics, tree=DEFAULT_TREE, quota="team") == (1, 95.0)
    bucket = "elastic_quota_admission_wait_seconds_bucket"
    assert count(metrics, bucket, tree=DEFAULT_TREE, quota="team", le="60.0") == 0
    assert count(metrics, bucket, tree=DEFAULT_TREE, quota="team", le="120.0") == 1


# -- webhooks -------------------------------------------------------------------------------------


async def allowed(
    registry: kopf.OperatorRegistry, webhook: str, resource: kopf.Resource, **request: Any
) -> bool:
    """Whether Kopf's round trip of one AdmissionReview allows it."""
    return bool((await admission_review(registry, webhook, resource, **request))["allowed"])


async def test_webhook_requests_are_counted_by_answer(
    state: ControllerState, k8s: Bodies, make_settings: Callable[..., Settings]
) -> None:
    metrics = Metrics()
    registry = make_registry(state, make_settings(webhook_port=9443), metrics)
    fine = k8s.quota("dept", max={"cpu": "4"}, is_parent=True)
    assert not await allowed(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=fine
    )
    assert count(metrics, "elastic_quota_webhook_requests_total",
                 webhook=VALIDATE_QUOTA, result="error") == 1  # fmt: skip
    state.on_quota(fine)
    state.mark_synced()
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    assert not await allowed(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=broken
    )
    child = k8s.quota("team", max={"cpu": "2"}, parent="dept")
    assert await allowed(registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=child)
    assert await allowed(
        registry, MUTATE_POD, POD_RESOURCE, operation="CREATE", object=k8s.pod("p", quota="dept")
    )
    requests = {
        (webhook, result): count(metrics, "elastic_quota_webhook_requests_total",
                                 webhook=webhook, result=result)
        for webhook in (VALIDATE_QUOTA, MUTATE_POD)
        for result in ("allowed", "denied", "error")
    }  # fmt: skip
    assert {key: value for key, value in requests.items() if value} == {
        (VALIDATE_QUOTA, "error"): 1,
        (VALIDATE_QUOTA, "denied"): 1,
        (VALIDATE_QUOTA, "allowed"): 1,
        (MUTATE_POD, "allowed"): 1,
    }


async def test_a_pod_refused_by_the_pod_webhook_is_denied_for_its_quota(
    state: ControllerState, k8s: Bodies, make_settings: Callable[..., Settings]
) -> None:
    metrics = Metrics()
    state.on_quota(k8s.quota("dept", max={"cpu": "4"}, is_parent=True))
    state.mark_synced()
    registry = make_registry(state, make_settings(webhook_port=9443), metrics)
    old = k8s.pod("p", quota="team")
    new = json.loads(json.dumps(old))
    new["metadata"]["labels"][keys.POD_LABEL_PREEMPTIBLE] = "false"
    assert not await allowed(
        registry, VALIDATE_POD, POD_RESOURCE, operation="UPDATE", object=new, oldObject=old
    )
    in_parent = k8s.pod("q", quota="dept")
    assert not await allowed(
        registry, VALIDATE_POD, POD_RESOURCE, operation="CREATE", object=in_parent
    )
    assert count(metrics, "elastic_quota_admissions_total", quota="dept", result="denied") == 1
    default = keys.DEFAULT_QUOTA  # "team" is no quota: the pod is the default quota's
    assert count(metrics, "elastic_quota_admissions_total", quota=default, result="denied") == 1
    assert count(metrics, "elastic_quota_webhook_requests_total",
                 webhook=VALIDATE_POD, result="denied") == 2  # fmt: skip


async def test_a_dry_run_pod_refused_by_the_pod_webhook_is_no_denied_admission(
    state: ControllerState, k8s: Bodies, make_settings: Callable[..., Settings]
) -> None:
    """``kubectl apply --dry-run=server`` creates no pod: its refusal is an answered request
    (webhook requests, ``denied``), not a pod refused for its quota (admissions)."""
    metrics = Metrics()
    state.on_quota(k8s.quota("dept", max={"cpu": "4"}, is_parent=True))
    state.mark_synced()
    registry = make_registry(state, make_settings(webhook_port=9443), metrics)
    in_parent = k8s.pod("q", quota="dept")
    assert not await allowed(
        registry, VALIDATE_POD, POD_RESOURCE, operation="CREATE", object=in_parent, dryRun=True
    )
    assert count(metrics, "elastic_quota_admissions_total", quota="dept", result="denied") == 0
    assert count(metrics, "elastic_quota_webhook_requests_total",
                 webhook=VALIDATE_POD, result="denied") == 1  # fmt: skip


def test_lease_renew_failures_are_counted_by_reason_from_zero() -> None:
    """The runner gives ``lease_renew_failed`` to the elector as its ``on_renew_failure``."""
    metrics = Metrics()
    name = "elastic_quota_lease_renew_failures_total"
    for reason in ("error", "timeout", "lost"):
        assert metrics.registry.get_sample_value(name, {"reason": reason}) == 0.0
    metrics.lease_renew_failed("timeout")
    metrics.lease_renew_failed("timeout")
    assert metrics.registry.get_sample_value(name, {"reason": "timeout"}) == 2.0
    assert metrics.registry.get_sample_value(name, {"reason": "error"}) == 0.0


async def test_the_operator_wires_the_elector_to_the_renew_failure_counter() -> None:
    from elasticquota.controller.runner import Operator
    from elasticquota.kube.fence import Fence

    metrics = Metrics()
    fence = Fence(renew_deadline=2.0)
    settings = Settings(lease_duration=3.0, identity="me")
    async with client.ApiClient() as api, client.ApiClient() as lease_api:
        operator = Operator(settings, api, metrics, lease_api, fence)
        assert operator.leader.fence is fence and operator.leader.renew_deadline == 2.0
        assert operator.leader._leases.api_client is lease_api  # not the writers' client
        operator.leader._on_renew_failure("lost")
    sample = {"reason": "lost"}
    assert metrics.registry.get_sample_value("elastic_quota_lease_renew_failures_total", sample)
