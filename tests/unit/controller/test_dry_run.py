"""A dry run is one more ``Cluster``: the loops run as always, nothing is sent, each would-be write
is said once.

Rules (controller/cluster.py, controller/runner.py): ``--dry-run`` gives every loop the
``DryRunCluster`` instead of the Kubernetes adapter (the demo's node simulation keeps the real one);
a write answers "nothing sent" (no object back, an eviction ``not sent``, a gate not released), so
memory keeps what the cluster holds and nothing is counted as done; each distinct would-be write is
logged once, and the calls are kept in a bounded record.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio import client

from elasticquota.controller.cluster import DRY_RUN_MEMORY, DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.reconcile.reserved import ensure_reserved_quotas
from elasticquota.controller.runner import Operator
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.decisions.overuse import ANNO_OVER_USED_SINCE
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies


def samples(metrics: Metrics, name: str) -> float:
    """The sum of a counter's samples over every label."""
    return sum(
        sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == name
    )


async def test_each_would_be_write_is_said_once_and_answers_nothing_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dry_run = DryRunCluster()
    with caplog.at_level(logging.INFO, logger="elasticquota.controller.cluster"):
        for _ in range(2):
            assert await dry_run.patch_quota("team", "a", {"metadata": {"labels": {}}}) is None
            assert await dry_run.write_quota("team", "a", {"k": "v"}, {"cpu": None}) is None
            assert await dry_run.evict("team", "p") == EvictionResult(EvictionOutcome.NOT_SENT)
            assert await dry_run.set_scheduling_gates("team", "p", []) is False
    assert [record.getMessage() for record in caplog.records] == [
        "dry-run: would write team/a: {'metadata': {'labels': {}}}",
        "dry-run: would write team/a: "
        "{'metadata': {'annotations': {'k': 'v'}}, 'status': {'used': {'cpu': None}}}",
        "dry-run: would evict Pod team/p",
        "dry-run: would set the scheduling gates of Pod team/p to []",
    ]
    assert len(dry_run.calls) == 8


async def test_its_record_is_bounded() -> None:
    dry_run = DryRunCluster()
    for index in range(DRY_RUN_MEMORY + 10):
        await dry_run.ensure_namespace(f"ns-{index}")
    assert len(dry_run.calls) == DRY_RUN_MEMORY
    assert dry_run.calls[-1] == ("ensure_namespace", "", f"ns-{DRY_RUN_MEMORY + 9}", None)


@pytest.mark.parametrize("dry", [True, False])
async def test_the_settings_choose_the_cluster_the_loops_write_to(dry: bool) -> None:
    async with client.ApiClient() as api:
        operator = Operator(Settings(identity="me", dry_run=dry), api)
        assert isinstance(operator.kube, KubeCluster) and operator.kube.api is api
        if dry:
            assert isinstance(operator.cluster, DryRunCluster)
        else:
            assert operator.cluster is operator.kube


async def test_a_dry_run_creates_no_reserved_quota(state: ControllerState) -> None:
    dry_run = DryRunCluster()
    await ensure_reserved_quotas(dry_run, state, "quota-system")
    assert state.quotas == {}
    assert sorted(name for verb, _, name, _ in dry_run.calls if verb == "create_quota") == sorted(
        keys.RESERVED_QUOTAS
    )


def gated(k8s: Bodies, name: str, cpu: str, priority: int) -> dict[str, Any]:
    body = k8s.pod(name, quota="team", requests={"cpu": cpu}, priority=priority)
    body["spec"]["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    return body


def running(k8s: Bodies, name: str, cpu: str) -> dict[str, Any]:
    return k8s.pod(name, quota="team", requests={"cpu": cpu}, node="n1", phase="Running")


@pytest.fixture
def dry_run(context: LoopContext, k8s: Bodies) -> LoopContext:
    """A dry run's loop context on node n1 (a revocation delay of 1 s)."""
    context.state.on_node(k8s.node("n1"))
    settings = Settings(identity="test", revocation_delay=1.0, eviction_rate=100.0)
    return replace(context, cluster=DryRunCluster(), settings=settings)


def team(context: LoopContext, k8s: Bodies, cpu: str, *pods: dict[str, Any]) -> DryRunCluster:
    """Quota ``team`` (min = max = ``cpu``, lends nothing) holding ``pods``, synced; the dry run."""
    labels = {keys.LABEL_ALLOW_LENT: "false"}
    context.state.on_quota(k8s.quota("team", min={"cpu": cpu}, max={"cpu": cpu}, labels=labels))
    for pod in pods:
        context.state.on_pod(pod)
    context.state.mark_synced()
    assert isinstance(context.cluster, DryRunCluster)
    return context.cluster


async def test_a_dry_run_gate_releases_and_preempts_nothing_and_counts_nothing(
    dry_run: LoopContext, k8s: Bodies
) -> None:
    pods = gated(k8s, "fits", "1", 5), running(k8s, "low", "3"), gated(k8s, "waits", "2", 5)
    cluster = team(dry_run, k8s, "4", *pods)
    gate = GateController(dry_run)
    await gate.step()
    assert list(gate.released) == [] and list(gate.preempted) == []
    assert {name for verb, _, name, _ in cluster.calls if verb == "evict"} == {"low"}
    assert samples(dry_run.metrics, "elastic_quota_admissions_total") == 0
    assert samples(dry_run.metrics, "elastic_quota_evictions_total") == 0


async def test_a_dry_run_revocation_round_evicts_and_records_nothing(
    dry_run: LoopContext, k8s: Bodies
) -> None:
    cluster = team(dry_run, k8s, "2", running(k8s, "keep", "2"), running(k8s, "extra", "2"))
    clock = iter([0.0, 10.0])
    controller = RevocationController(dry_run, clock=lambda: next(clock))
    await controller.check_once()  # the over-use starts
    await controller.check_once()  # a round is due
    assert [verb for verb, *_ in cluster.calls].count("evict") == 1
    assert list(controller.evicted) == []
    assert samples(dry_run.metrics, "elastic_quota_evictions_total") == 0
    assert ANNO_OVER_USED_SINCE not in dry_run.state.quotas[("team", "team")].annotations
