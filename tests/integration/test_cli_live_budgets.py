"""``explain`` and ``plan`` read the PodDisruptionBudgets of a real API server (1.20 serves only
``policy/v1beta1``: the ``policy/v1`` list answers 404 and the reader falls back) and say which
victim the budget keeps, with the figures the disruption controller wrote in its status."""

from __future__ import annotations

from typing import Any

import harness
import pytest
from kubernetes_asyncio import client

from elasticquota.core.decisions.explain import explain
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.errors import read_json
from eqdev.kubelet import mark_running

pytestmark = pytest.mark.timeout(120)


async def budget_status(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    response = await api.call_api(
        f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets/{name}",
        "GET",
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    budget: dict[str, Any] = await read_json(response)
    return budget


async def test_explain_names_the_budget_that_keeps_a_revocation_victim(
    api: client.ApiClient,
) -> None:
    namespace, node = harness.unique("pdb"), harness.unique("node")
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(node, "8", "32Gi"))
    await apply_manifest(
        api, harness.quota_manifest(namespace, namespace, {"cpu": "1"}, {"cpu": "1"})
    )
    for name in ("web-1", "web-2"):  # 2 cpu used against a runtime of at most 1: over-used
        pod = harness.pod_manifest(namespace, name, "1", labels={"app": "web"}, node=node)
        await apply_manifest(api, pod)
        await mark_running(api, namespace, name)
    await harness.create_pdb(api, namespace, "web", name="both", minimum=2)

    async def counted() -> bool:
        budget = await budget_status(api, namespace, "both")
        status = budget.get("status") or {}
        return bool(status.get("observedGeneration", 0) >= budget["metadata"]["generation"])

    await harness.eventually(counted, 60, what="the disruption controller's status of the budget")

    plan = await harness.cluster_plan(api)
    [victims] = [v for q, v in plan.revocations if q == namespace]
    assert victims, "the over-used quota has victims"
    victim = victims[0].key
    found = explain(plan.snapshot, victim, budgets=plan.budgets)
    assert "the next revocation round evicts it" in found.verdict
    assert found.kept == [
        (
            victim,
            f"PodDisruptionBudget {namespace}/both allows no disruption now "
            "(status.disruptionsAllowed 0): the Eviction API refuses its eviction (429)",
        )
    ]
