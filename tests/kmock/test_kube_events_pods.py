"""kube.events and kube.pods against KMock: the Event posted on an object, the demo's pod writes.

Rules (kube/events.py, kube/pods.py): an Event is a core/v1 Event in the involved object's
namespace (``default`` for cluster-scoped objects) naming the object, the reason and the message
(cut to 1024 characters), of type Warning unless told, from the operator's component; posting is
retried on transient errors. Binding a pod creates its ``binding`` subresource targeting the node;
a refused binding is raised (retried when transient), never taken for a success. Marking a pod
Running is a merge patch of its status: phase Running, a start time and the Ready condition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kmock import KubernetesError
from kmock_requests import only_request
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.events import COMPONENT, post_event
from elasticquota.kube.quotas import MERGE_PATCH
from eqdev.kubelet import bind_pod, mark_running

QUOTA = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "ElasticQuota",
    "namespace": "team",
    "name": "a",
    "uid": "uid-a",
}
BINDING_URL = "/api/v1/namespaces/team/pods/p/binding"

StatusBody = Callable[[int, str], dict[str, Any]]


async def test_an_event_names_the_object_reason_and_message(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    await post_event(api, QUOTA, "InvalidElasticQuota", "spec.min.cpu (8) is greater than max")

    request = only_request(kmock, kmock.method.POST, "/api/v1/namespaces/team/events")
    event = request.data
    assert event["involvedObject"] == QUOTA
    assert (event["reason"], event["type"]) == ("InvalidElasticQuota", "Warning")
    assert event["message"] == "spec.min.cpu (8) is greater than max"
    assert event["source"] == {"component": COMPONENT}
    assert event["reportingComponent"] == COMPONENT
    assert event["metadata"]["namespace"] == "team"
    assert event["metadata"]["name"].startswith("a.")
    assert event["count"] == 1 and event["firstTimestamp"] == event["lastTimestamp"]


async def test_each_event_has_its_own_name(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    await post_event(api, QUOTA, "InvalidElasticQuota", "one")
    await post_event(api, QUOTA, "InvalidElasticQuota", "two")
    names = {request.data["metadata"]["name"] for request in kmock}
    assert len(names) == 2


async def test_an_event_on_a_cluster_scoped_object_goes_to_default(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    await post_event(api, node, "Reason", "message", event_type="Normal")
    request = only_request(kmock, kmock.method.POST, "/api/v1/namespaces/default/events")
    assert request.data["type"] == "Normal"


async def test_a_long_message_is_cut(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    await post_event(api, QUOTA, "Reason", "x" * 5000)
    assert kmock[0].data["message"] == "x" * 1024


async def test_posting_an_event_is_retried_on_a_server_error(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, retry_delays: list[float]
) -> None:
    def refuse_unstored(request: kmock.Request) -> None:
        del kmock.objects["v1/events", request.namespace, request.data["metadata"]["name"]]
        raise KubernetesError(503, "ServiceUnavailable", "try again")

    kmock["post"][:1] << refuse_unstored
    await post_event(api, QUOTA, "Reason", "message")
    assert len(kmock) == 2 and retry_delays == [0.2]


async def test_an_event_stored_despite_an_error_is_not_an_error(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """The retry finds the Event (409 on its unique name): it was posted; no duplicate follows."""
    kmock["post"][:1] << 504 << k8s_status(504, "Timeout")
    await post_event(api, QUOTA, "Reason", "message")
    assert len(kmock) == 2
    assert len(kmock.objects) == 1


async def test_a_pod_is_bound_through_its_binding_subresource(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    await bind_pod(api, "team", "p", "n1")

    request = only_request(kmock, kmock.method.POST, BINDING_URL)
    assert request.data == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "team"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }


@pytest.mark.parametrize(("code", "reason"), [(409, "Conflict"), (404, "NotFound")])
async def test_a_refused_binding_is_raised(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    code: int,
    reason: str,
    k8s_status: StatusBody,
) -> None:
    """E.g. 409: the pod is bound already; 404: it was deleted. Not a success either way."""
    kmock["post"] << code << k8s_status(code, reason)
    with pytest.raises(ApiException) as raised:
        await bind_pod(api, "team", "p", "n1")
    assert raised.value.status == code


async def test_a_binding_refused_by_a_server_error_is_retried(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    retry_delays: list[float],
    k8s_status: StatusBody,
) -> None:
    kmock["post"][:2] << 500 << k8s_status(500, "InternalError")
    await bind_pod(api, "team", "p", "n1")
    assert len(kmock) == 3 and retry_delays == [0.2, 0.4]


async def test_marking_a_pod_running_is_a_merge_patch_of_its_status(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock.objects["v1/pods", "team", "p"] = {
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Pending"},
    }

    await mark_running(api, "team", "p")

    request = only_request(kmock, kmock.method.PATCH, "/api/v1/namespaces/team/pods/p/status")
    assert request.headers["Content-Type"] == MERGE_PATCH
    status_patch = request.data["status"]
    assert status_patch["phase"] == "Running"
    assert status_patch["startTime"].endswith("Z")
    (ready,) = status_patch["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert kmock.objects["v1/pods", "team", "p"] >= {"status": {"phase": "Running"}}


async def test_a_repeated_event_counts_on_the_event_already_posted(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """client-go's aggregation: the same reason, message and type on the same object is one Event
    whose count grows (a merge patch of count and lastTimestamp), not a new Event each time."""
    for _ in range(3):
        await post_event(api, QUOTA, "QuotaOverUsed", "over its runtime; evicting: none evictable")

    methods = [request.method for request in kmock]
    assert methods == [kmock.method.POST, kmock.method.PATCH, kmock.method.PATCH]
    name = kmock[0].data["metadata"]["name"]
    assert kmock[1].url.path == kmock[2].url.path == f"/api/v1/namespaces/team/events/{name}"
    assert kmock[1].headers["Content-Type"] == MERGE_PATCH
    assert set(kmock[2].data) == {"count", "lastTimestamp"} and kmock[2].data["count"] == 3
    (stored,) = list(kmock.objects.values())
    assert stored["count"] == 3 and stored["firstTimestamp"] == kmock[0].data["firstTimestamp"]


async def test_another_message_or_object_is_another_event(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    other = {**QUOTA, "name": "b", "uid": "uid-b"}
    await post_event(api, QUOTA, "QuotaOverUsed", "one")
    await post_event(api, QUOTA, "QuotaOverUsed", "two")
    await post_event(api, other, "QuotaOverUsed", "one")
    await post_event(api, QUOTA, "QuotaOverUsed", "one")  # a repeat of the first

    assert [request.method for request in kmock] == [kmock.method.POST] * 3 + [kmock.method.PATCH]
    assert len(kmock.objects) == 3


async def test_a_repeat_of_an_expired_event_posts_a_new_one(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """The API server deletes Events after their TTL: the next repeat starts a new series."""
    await post_event(api, QUOTA, "QuotaOverUsed", "message")
    kmock.objects.clear()
    await post_event(api, QUOTA, "QuotaOverUsed", "message")
    await post_event(api, QUOTA, "QuotaOverUsed", "message")

    methods = [request.method for request in kmock]
    assert methods == [kmock.method.POST, kmock.method.PATCH, kmock.method.POST, kmock.method.PATCH]
    (stored,) = list(kmock.objects.values())
    assert stored["count"] == 2
