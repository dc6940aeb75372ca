"""kube.apply against KMock: creating the objects of a set of manifests (demo, integration tests).

Rules (kube/apply.py): each supported kind is created at its own endpoint; a Node's status goes
through the status subresource (merge patch) after the Node is created, as a kubelet would write
it; a Pod is created without its status; an object that exists already is left alone (False); an
unsupported kind is refused; manifests are applied in dependency order.

A pod refused for a PriorityClass that exists (the API server's Priority admission reads the
classes from a cache that can lag behind their creation) is created again until the cache has it;
one refused for a class that does not exist, or for another reason, is refused at once.

Namespaces are left out: KMock cannot parse a POST to ``/api/v1/namespaces`` (see conftest).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kmock import KubernetesError
from kmock_requests import only_request
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from profile_bodies import profile_body
from quota_bodies import quota_body

from elasticquota.kube.apply import APPLY_ORDER, apply_manifest, apply_order
from elasticquota.kube.quotas import MERGE_PATCH

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"pool": "gpu"}},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}},
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team"},
    "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]},
    "status": {"phase": "Running"},
}

PROFILES = "quota.koordinator.sh/v1alpha1/elasticquotaprofiles"
QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"


async def test_a_node_is_created_then_given_its_status(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    before = copy.deepcopy(NODE)
    assert await apply_manifest(api, NODE)

    create, status = list(kmock)
    assert (create.method, create.url.path) == (kmock.method.POST, "/api/v1/nodes")
    assert "status" not in create.data
    assert (status.method, status.url.path) == (kmock.method.PATCH, "/api/v1/nodes/n1/status")
    assert status.headers["Content-Type"] == MERGE_PATCH
    assert status.data == {"status": NODE["status"]}
    assert before == NODE  # the caller's manifest is not modified


async def test_a_bound_pod_is_created_then_given_its_status_as_its_kubelet_would(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    assert await apply_manifest(api, POD)
    create, status = list(kmock)
    assert create.url.path == "/api/v1/namespaces/team/pods"
    assert create.data == {key: value for key, value in POD.items() if key != "status"}
    assert (status.method, status.url.path) == (
        kmock.method.PATCH,
        "/api/v1/namespaces/team/pods/p/status",
    )
    assert status.headers["Content-Type"] == MERGE_PATCH
    assert status.data == {"status": POD["status"]}


async def test_a_pending_pod_is_created_without_its_status(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    pending = {**POD, "spec": {"containers": POD["spec"]["containers"]}}
    assert await apply_manifest(api, pending)
    request = only_request(kmock, kmock.method.POST, "/api/v1/namespaces/team/pods")
    assert request.data == {key: value for key, value in pending.items() if key != "status"}


async def test_quotas_and_profiles_are_created_in_their_namespace(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    quota = quota_body("a", "team", max={"cpu": "4"}, uid=None)
    profile = profile_body("gpu", "team", quota_name="gpu-root", match_labels={"pool": "gpu"})
    assert await apply_manifest(api, quota)
    assert await apply_manifest(api, profile)
    assert kmock.objects[QUOTAS, "team", "a"] == quota
    assert kmock.objects[PROFILES, "team", "gpu"] == profile


async def test_a_priority_class_is_created(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    manifest = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    assert await apply_manifest(api, manifest)
    assert kmock[0].url.path == "/apis/scheduling.k8s.io/v1/priorityclasses"


HIGH: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}
PRIORITY_PODS = "/api/v1/namespaces/team/pods"
CLASS_NOT_SEEN = 'pods "p" is forbidden: no PriorityClass with name high was found'


def with_priority(pod: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "spec": {**pod["spec"], "priorityClassName": "high"}}


def refuse(kmock: kmock.KubernetesEmulator, message: str) -> Callable[[kmock.Request], None]:
    """A 403 with ``message`` for a pod creation (KMock stores before answering: undone)."""

    def refused(request: kmock.Request) -> None:
        del kmock.objects["v1/pods", request.namespace, request.data["metadata"]["name"]]
        raise KubernetesError(403, "Forbidden", message)

    return refused


async def test_a_pod_refused_for_a_class_its_admission_has_not_seen_yet_is_created_again(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    assert await apply_manifest(api, HIGH)
    kmock["post", PRIORITY_PODS][:2] << refuse(kmock, CLASS_NOT_SEEN)
    assert await apply_manifest(api, with_priority(POD))
    paths = [(request.method, request.url.path) for request in list(kmock)[1:]]
    read = (kmock.method.GET, "/apis/scheduling.k8s.io/v1/priorityclasses/high")
    create = (kmock.method.POST, PRIORITY_PODS)
    assert paths[:5] == [create, read, create, read, create]
    assert kmock.objects["v1/pods", "team", "p"]["spec"]["priorityClassName"] == "high"


@pytest.mark.parametrize(
    ("class_exists", "message"),
    [
        (False, CLASS_NOT_SEEN),
        (True, 'pods "p" is forbidden: User "u" cannot create resource "pods"'),
    ],
    ids=["no-such-class", "another-reason"],
)
async def test_a_pod_refused_otherwise_is_refused_at_once(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, class_exists: bool, message: str
) -> None:
    if class_exists:
        assert await apply_manifest(api, HIGH)
    kmock["post", PRIORITY_PODS] << refuse(kmock, message)
    with pytest.raises(ApiException) as refused:
        await apply_manifest(api, with_priority(POD))
    assert refused.value.status == 403
    posts = [request for request in kmock if request.url.path == PRIORITY_PODS]
    assert len(posts) == 1


@pytest.mark.parametrize("manifest", [NODE, POD], ids=["node", "pod"])
async def test_an_existing_object_is_left_alone(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, manifest: dict[str, Any]
) -> None:
    assert await apply_manifest(api, manifest)
    count = len(kmock)
    assert not await apply_manifest(api, manifest)
    assert len(kmock) == count + 1  # one refused creation, nothing else


async def test_an_unsupported_kind_is_refused(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    with pytest.raises(ValueError, match="Deployment"):
        await apply_manifest(api, {"kind": "Deployment", "metadata": {"name": "d"}})
    assert len(kmock) == 0


def test_manifests_are_applied_in_dependency_order() -> None:
    kinds = ["Pod", "ElasticQuota", "Other", "Node", "ElasticQuotaProfile", "Namespace"]
    kinds.append("PriorityClass")
    ordered = [m["kind"] for m in apply_order([{"kind": kind} for kind in kinds])]
    assert ordered == [*APPLY_ORDER, "Other"]
    assert APPLY_ORDER.index("Namespace") < APPLY_ORDER.index("ElasticQuota")
    assert APPLY_ORDER.index("ElasticQuota") < APPLY_ORDER.index("Pod")
