"""A dry run is one more ``Cluster``: the loops run as always, nothing is sent, each would-be write
is said once.

Rules (controller/cluster.py, controller/runner.py): ``--dry-run`` gives every loop the
``DryRunCluster`` instead of the Kubernetes adapter (the demo's node simulation keeps the real one);
a write answers "nothing sent" (no object back, an eviction ``not sent``, a gate not released), so
memory keeps what the cluster holds and nothing is counted as done; each distinct would-be write is
logged once, and the calls are kept in a bounded record.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio import client

from elasticquota.controller.cluster import DRY_RUN_MEMORY, DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.gating import GateController
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.reserved import ensure_reserved_quotas
from elasticquota.controller.revocation import RevocationController
from elasticquota.controller.runner import Operator
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.overuse import ANNO_OVER_USED_SINCE
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.evictions import EvictionOutcome
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
            assert await dry_run.patch_quota_status("team", "a", {"used": {}}) is None
            assert await dry_run.evict("team", "p") is EvictionOutcome.NOT_SENT
            assert await dry_run.set_scheduling_gates("team", "p", []) is False
    assert [record.getMessage() for record in caplog.records] == [
        "dry-run: would write team/a: {'metadata': {'labels': {}}}",
        "dry-run: would write the status of team/a: {'used': {}}",
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


async def test_a_dry_run_gate_releases_and_preempts_nothing_and_counts_nothing(
    state: ControllerState, k8s: Bodies, leading: asyncio.Event
) -> None:
    labels = {keys.LABEL_ALLOW_LENT: "false"}
    state.on_quota(k8s.quota("team", min={"cpu": "4"}, max={"cpu": "4"}, labels=labels))
    state.on_node(k8s.node("n1"))
    state.on_pod(gated(k8s, "fits", "1", 5))
    state.on_pod(k8s.pod("low", quota="team", requests={"cpu": "3"}, node="n1", phase="Running"))
    state.on_pod(gated(k8s, "waits", "2", 5))
    state.mark_synced()
    metrics = Metrics()
    dry_run = DryRunCluster()
    gate = GateController(LoopContext(state, dry_run, Settings(identity="test"), leading, metrics))
    await gate.step()
    assert list(gate.released) == [] and list(gate.preempted) == []
    assert {name for verb, _, name, _ in dry_run.calls if verb == "evict"} == {"low"}
    assert samples(metrics, "elastic_quota_admissions_total") == 0
    assert samples(metrics, "elastic_quota_evictions_total") == 0


async def test_a_dry_run_revocation_round_evicts_and_records_nothing(
    state: ControllerState, k8s: Bodies, leading: asyncio.Event
) -> None:
    labels = {keys.LABEL_ALLOW_LENT: "false"}
    state.on_quota(k8s.quota("team", min={"cpu": "2"}, max={"cpu": "2"}, labels=labels))
    state.on_node(k8s.node("n1"))
    for name in ("keep", "extra"):
        state.on_pod(k8s.pod(name, quota="team", requests={"cpu": "2"}, node="n1", phase="Running"))
    state.mark_synced()
    metrics = Metrics()
    clock = iter([0.0, 10.0])
    dry_run = DryRunCluster()
    settings = Settings(identity="test", revocation_delay=1.0, eviction_rate=100.0)
    context = LoopContext(state, dry_run, settings, leading, metrics)
    controller = RevocationController(context, clock=lambda: next(clock))
    await controller.check_once()  # the over-use starts
    await controller.check_once()  # a round is due
    assert [verb for verb, *_ in dry_run.calls].count("evict") == 1
    assert list(controller.evicted) == []
    assert samples(metrics, "elastic_quota_evictions_total") == 0
    assert ANNO_OVER_USED_SINCE not in state.quotas[("team", "team")].annotations
