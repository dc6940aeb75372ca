"""The CLI's read of PodDisruptionBudgets (``cli.cluster_objects.read_budgets``): ``policy/v1``,
else ``policy/v1beta1`` where the server does not serve it (before 1.21; the local 1.20 control
plane answers the same in tests/integration/test_cli_live_budgets.py); a user who may not list
them gets the rest and a note; any other refusal is the command's error, as for every list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kubernetes_asyncio import client

from elasticquota.cli.cluster_objects import cluster_manifests, read_budgets
from elasticquota.cli.errors import ClusterReadError
from elasticquota.plan.loader import Manifests

StatusBody = Callable[[int, str], dict[str, Any]]
V1 = "get /apis/policy/v1/poddisruptionbudgets"
V1BETA1 = "get /apis/policy/v1beta1/poddisruptionbudgets"
BUDGET = {
    "metadata": {"name": "keep", "namespace": "team", "generation": 1},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    "status": {"disruptionsAllowed": 0, "observedGeneration": 1},
}


#: The other lists of a cluster read, each answered empty.
LISTS = (
    "get /apis/scheduling.sigs.k8s.io/v1alpha1/elasticquotas",
    "get /apis/quota.koordinator.sh/v1alpha1/elasticquotaprofiles",
    "get /api/v1/pods",
    "get /api/v1/nodes",
    "get /apis/scheduling.k8s.io/v1/priorityclasses",
)


def budget_list(version: str) -> dict[str, Any]:
    return {"apiVersion": f"policy/{version}", "kind": "PodDisruptionBudgetList", "items": [BUDGET]}


async def test_the_budgets_are_listed_in_policy_v1(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock[V1] << budget_list("v1")
    manifests = Manifests()
    await read_budgets(api, manifests)
    assert manifests.budgets == [
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", **BUDGET}
    ]
    assert manifests.unread == []


async def test_a_server_without_policy_v1_is_read_in_v1beta1(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock[V1] << 404 << k8s_status(404, "NotFound")
    kmock[V1BETA1] << budget_list("v1beta1")
    manifests = Manifests()
    await read_budgets(api, manifests)
    assert [item["apiVersion"] for item in manifests.budgets] == ["policy/v1beta1"]
    assert [request.url.path for request in kmock] == [
        "/apis/policy/v1/poddisruptionbudgets",
        "/apis/policy/v1beta1/poddisruptionbudgets",
    ]


async def test_a_user_who_may_not_list_them_gets_a_note(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock[V1] << 403 << k8s_status(403, "Forbidden")
    manifests = Manifests()
    await read_budgets(api, manifests)
    assert manifests.budgets == []
    [note] = manifests.unread
    assert note.startswith("PodDisruptionBudgets not read (cannot read the cluster: 403 Forbidden")
    assert note.endswith("evictions they would refuse are not shown")
    assert len(kmock) == 1  # not asked again in v1beta1


async def test_any_other_refusal_is_the_commands_error(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock[V1] << 500 << k8s_status(500, "InternalError")
    with pytest.raises(ClusterReadError) as raised:
        await read_budgets(api, Manifests())
    assert "500 Internal Server Error listing poddisruptionbudgets.policy (v1)" in str(raised.value)


@pytest.mark.parametrize("budgets", [True, False])
async def test_a_command_that_names_no_victim_does_not_list_them(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    budgets: bool,
) -> None:
    """``usage`` reads the cluster without budgets: no request for them, so a refusal of that
    list (here a 500, the command's error for ``explain``) is not its business."""
    for request in LISTS:
        kmock[request] << {"items": []}
    kmock[V1] << 500 << k8s_status(500, "InternalError")
    if budgets:
        with pytest.raises(ClusterReadError):
            await cluster_manifests(api)
    else:
        manifests = await cluster_manifests(api, budgets=False)
        assert (manifests.quotas, manifests.budgets, manifests.unread) == ([], [], [])
    listed = [request.url.path for request in kmock]
    assert ("/apis/policy/v1/poddisruptionbudgets" in listed) is budgets
    assert len(listed) == len(LISTS) + budgets
