"""kube.pods gate writes against KMock: releasing a pod, and the condition that says why it waits.

Rules (kube/pods.py): releasing replaces ``spec.schedulingGates`` with the remaining gates by a JSON
merge patch of the pod; the admission condition ``ElasticQuotaAdmission`` is written to the pod's
status by a strategic merge patch (merged by condition type, so other conditions stay).
"""

from __future__ import annotations

import kmock
import pytest
from kmock_requests import only_request
from kubernetes_asyncio import client

from elasticquota.kube.pods import (
    STRATEGIC_MERGE,
    WAITING_CONDITION,
    set_scheduling_gates,
    set_waiting_condition,
)
from elasticquota.kube.quotas import MERGE_PATCH

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team"},
    "spec": {"containers": [{"name": "main", "image": "app:1"}]},
}


@pytest.fixture(autouse=True)
def the_pod_exists(kmock: kmock.KubernetesEmulator) -> None:
    kmock.objects["v1/pods", "team", "p"] = dict(POD)


async def test_releasing_a_pod_keeps_only_the_other_gates(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    await set_scheduling_gates(api, "team", "p", ["example.com/other"])
    request = only_request(kmock, kmock.method.PATCH, "/api/v1/namespaces/team/pods/p")
    assert request.headers["Content-Type"] == MERGE_PATCH
    assert request.data == {"spec": {"schedulingGates": [{"name": "example.com/other"}]}}


async def test_a_waiting_pod_gets_a_false_condition_with_the_reason(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    reason = "quota team: cpu used 4 + request 2 > runtime 4"
    await set_waiting_condition(api, "team", "p", True, reason)
    request = only_request(kmock, kmock.method.PATCH, "/api/v1/namespaces/team/pods/p/status")
    assert request.headers["Content-Type"] == STRATEGIC_MERGE
    (condition,) = request.data["status"]["conditions"]
    assert condition["type"] == WAITING_CONDITION
    assert (condition["status"], condition["reason"]) == ("False", "QuotaExceeded")
    assert condition["message"] == reason
