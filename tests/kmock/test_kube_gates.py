"""kube.pods gate writes against KMock: releasing a pod, and the condition that says why it waits.

Rules (kube/pods.py): releasing replaces ``spec.schedulingGates`` with the remaining gates by a JSON
patch of the pod (RFC 6902), which first tests ``/metadata/creationTimestamp`` when the creation
time of the pod decided about is given: the API server refuses the whole patch (422) when another
pod has the name (one deleted and recreated since), and that, like a pod that is gone (404), is
"not released" (False), not an error to retry. The admission condition ``ElasticQuotaAdmission``
is written to the pod's status by a strategic merge patch (merged by condition type, so other
conditions stay).

KMock applies JSON patches, but answers a failed ``test`` with a 500: the API server's 422 is a
canned answer here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kmock_requests import only_request
from kubernetes_asyncio import client

from elasticquota.core.keys import ADMISSION_CONDITION
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.kube.pods import (
    JSON_PATCH,
    STRATEGIC_MERGE,
    set_scheduling_gates,
    set_waiting_condition,
)

POD_URL = "/api/v1/namespaces/team/pods/p"
UID = "0f3c9a52-5d8e-4c61-9e0b-7a1d2b3c4d5e"
CREATED = "2026-11-27T10:00:00Z"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team", "uid": UID, "creationTimestamp": CREATED},
    "spec": {
        "containers": [{"name": "main", "image": "app:1"}],
        "schedulingGates": [{"name": "elasticquota.dev/admission"}, {"name": "example.com/other"}],
    },
}
StatusBody = Callable[[int, str], dict[str, Any]]


@pytest.fixture(autouse=True)
def the_pod_exists(kmock: kmock.KubernetesEmulator) -> None:
    kmock.objects["v1/pods", "team", "p"] = dict(POD)


async def test_releasing_a_pod_keeps_only_the_other_gates(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    assert await set_scheduling_gates(api, "team", "p", ["example.com/other"]) is True
    request = only_request(kmock, kmock.method.PATCH, POD_URL)
    assert request.headers["Content-Type"] == JSON_PATCH
    assert request.data == [
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "example.com/other"}]}
    ]


async def test_a_release_tests_the_creation_time_of_the_pod_decided_about_first(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    assert await set_scheduling_gates(api, "team", "p", [], CREATED) is True
    request = only_request(kmock, kmock.method.PATCH, POD_URL)
    assert request.headers["Content-Type"] == JSON_PATCH
    assert request.data == [
        {"op": "test", "path": "/metadata/creationTimestamp", "value": CREATED},
        {"op": "add", "path": "/spec/schedulingGates", "value": []},
    ]
    assert kmock.objects["v1/pods", "team", "p"]["spec"]["schedulingGates"] == []


async def test_a_pod_recreated_under_the_name_is_not_released_nor_retried(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
) -> None:
    """The test failed: the API server answers 422 (patch.go: a JSON patch it cannot apply)."""
    kmock["patch"] << 422 << k8s_status(422, "UnprocessableEntity")
    assert await set_scheduling_gates(api, "team", "p", [], CREATED) is False
    only_request(kmock, kmock.method.PATCH, POD_URL)
    assert retry_delays == []


async def test_a_pod_that_is_gone_is_not_released(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock["patch"] << 404 << k8s_status(404, "NotFound")
    assert await set_scheduling_gates(api, "team", "p", [], CREATED) is False
    only_request(kmock, kmock.method.PATCH, POD_URL)


async def test_a_waiting_pod_gets_a_false_condition_with_the_reason(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    reason = "quota team: cpu used 4 + request 2 > runtime 4"
    await set_waiting_condition(api, "team", "p", True, reason)
    request = only_request(kmock, kmock.method.PATCH, "/api/v1/namespaces/team/pods/p/status")
    assert request.headers["Content-Type"] == STRATEGIC_MERGE
    (condition,) = request.data["status"]["conditions"]
    assert condition["type"] == ADMISSION_CONDITION
    assert (condition["status"], condition["reason"]) == ("False", "QuotaExceeded")
    assert condition["message"] == reason


async def test_the_condition_of_the_pod_decided_about_names_its_uid(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """Given the creation time, the pod is read first and the patch carries its uid: the API
    server refuses a uid that is not the pod's (422, "field is immutable"), so the condition
    reaches no pod recreated under the name after the read. The uid is the answer (for the
    Event that follows)."""
    assert await set_waiting_condition(api, "team", "p", True, "no room", CREATED) == UID
    read, patch = list(kmock)
    assert (read.method, read.url.path) == (kmock.method.GET, POD_URL)
    assert (patch.method, patch.url.path) == (kmock.method.PATCH, f"{POD_URL}/status")
    assert patch.headers["Content-Type"] == STRATEGIC_MERGE
    assert patch.data["metadata"] == {"uid": UID}
    assert patch.data["status"]["conditions"][0]["type"] == ADMISSION_CONDITION


async def test_a_pod_recreated_under_the_name_gets_no_condition(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, retry_delays: list[float]
) -> None:
    """Created at another time than the pod decided about: nothing is written (None)."""
    later = {**POD, "metadata": {**POD["metadata"], "creationTimestamp": "2026-11-27T10:05:00Z"}}
    kmock.objects["v1/pods", "team", "p"] = later
    assert await set_waiting_condition(api, "team", "p", True, "no room", CREATED) is None
    only_request(kmock, kmock.method.GET, POD_URL)
    assert retry_delays == []


@pytest.mark.parametrize(("code", "reason"), [(422, "Invalid"), (404, "NotFound")])
async def test_a_pod_recreated_or_gone_after_the_read_gets_no_condition_nor_retry(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
    code: int,
    reason: str,
) -> None:
    """422: the uid of the patch is not the pod's (recreated between the read and the write)."""
    kmock["patch"] << code << k8s_status(code, reason)
    assert await set_waiting_condition(api, "team", "p", True, "no room", CREATED) is None
    assert [request.method for request in kmock] == [kmock.method.GET, kmock.method.PATCH]
    assert retry_delays == []


async def test_the_cluster_adapter_passes_the_creation_time_on(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """``Cluster.evict``, ``Cluster.set_scheduling_gates`` and ``Cluster.set_waiting_condition``
    (the port the loops write through) check the creation time they are given (the eviction and
    the condition as the uid of the pod read)."""
    cluster = KubeCluster(api)
    assert await cluster.set_waiting_condition("team", "p", False, "fits", CREATED) == UID
    assert await cluster.set_scheduling_gates("team", "p", [], CREATED) is True
    assert await cluster.evict("team", "p", CREATED) == EvictionResult(EvictionOutcome.EVICTED, UID)
    _, condition, release, read, eviction = list(kmock)
    assert condition.data["metadata"] == {"uid": UID}
    assert release.data[0] == {
        "op": "test",
        "path": "/metadata/creationTimestamp",
        "value": CREATED,
    }
    assert (read.method, eviction.data["deleteOptions"]) == (
        kmock.method.GET,
        {"preconditions": {"uid": UID}},
    )
