"""kube.quotas against KMock: the requests sent, and how failures are retried or raised.

Rules (kube/quotas.py, kube/errors.py): every write is a JSON merge patch (Content-Type
``application/merge-patch+json``) with exactly the given body, to the object's URL or its
``/status`` subresource, and returns the server's object; 409, 429 and 5xx are retried with
exponential backoff (0.2 s doubling, at most 5 attempts) and then succeed or raise; other errors
(404, 422, ...) are raised at once; creating a quota that exists returns None, without retrying.
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

from elasticquota.controller.reconcile.writer import Writer, pending_writes
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.quotas import (
    MERGE_PATCH,
    create_quota,
    list_quotas,
    patch_profile,
    patch_quota,
)
from elasticquota.settings import Settings

QUOTA_URL = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/team/elasticquotas/a"
REASONS = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}

PROFILES = "quota.koordinator.sh/v1alpha1/elasticquotaprofiles"
QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"

StatusBody = Callable[[int, str], dict[str, Any]]


def quota_body(name: str = "a", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "spec": {"max": {"cpu": "4"}},
        **extra,
    }


def through_status(api: client.ApiClient) -> KubeCluster:
    """The adapter, writing ``status.used`` through the status subresource."""
    cluster = KubeCluster(api)
    cluster.quota_figures.through_status = True
    return cluster


@pytest.fixture
def quota(kmock: kmock.KubernetesEmulator) -> dict[str, Any]:
    body = quota_body()
    kmock.objects[QUOTAS, "team", "a"] = body
    return body


# -- the requests ---------------------------------------------------------------------------------


async def test_a_quota_patch_is_a_merge_patch_of_exactly_the_given_body(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, quota: dict[str, Any]
) -> None:
    patch = {"metadata": {"annotations": {keys.ANNO_REQUEST: '{"cpu":"1"}'}}}

    returned = await patch_quota(api, "team", "a", patch)

    request = only_request(kmock, kmock.method.PATCH, QUOTA_URL)
    assert request.headers["Content-Type"] == MERGE_PATCH == "application/merge-patch+json"
    assert request.data == patch
    assert returned["metadata"]["annotations"] == {keys.ANNO_REQUEST: '{"cpu":"1"}'}
    assert returned["metadata"]["uid"] == "uid-a"  # the server's whole object comes back


async def test_a_status_patch_goes_to_the_status_subresource(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, quota: dict[str, Any]
) -> None:
    returned = await through_status(api).write_quota("team", "a", {}, {"cpu": "2"})

    request = only_request(kmock, kmock.method.PATCH, f"{QUOTA_URL}/status")
    assert request.subresource == "status"
    assert request.headers["Content-Type"] == MERGE_PATCH
    assert request.data == {"status": {"used": {"cpu": "2"}}}
    assert returned["status"] == {"used": {"cpu": "2"}}


async def test_a_profile_patch_is_a_merge_patch_on_the_profile(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock.objects[PROFILES, "team", "gpu"] = {"metadata": {"name": "gpu", "namespace": "team"}}
    patch = {"metadata": {"labels": {keys.LABEL_TREE_ID: "42"}}}

    await patch_profile(api, "team", "gpu", patch)

    path = "/apis/quota.koordinator.sh/v1alpha1/namespaces/team/elasticquotaprofiles/gpu"
    request = only_request(kmock, kmock.method.PATCH, path)
    assert request.headers["Content-Type"] == MERGE_PATCH
    assert request.data == patch
    assert kmock.objects[PROFILES, "team", "gpu"] >= patch


async def test_a_quota_is_created_in_its_namespace(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    body = quota_body("new")
    created = await create_quota(api, body)

    request = only_request(
        kmock,
        kmock.method.POST,
        "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/team/elasticquotas",
    )
    assert request.data == body
    assert created == body


async def test_quotas_are_listed_cluster_wide(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = quota_body("a")
    kmock.objects[QUOTAS, "other", "b"] = {**quota_body("b"), "metadata": {"name": "b"}}

    items = await list_quotas(api)

    assert kmock[0].url.path == "/apis/scheduling.sigs.k8s.io/v1alpha1/elasticquotas"
    assert sorted(item["metadata"]["name"] for item in items) == ["a", "b"]


# -- retries --------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(REASONS))
async def test_a_transient_refusal_is_retried_and_succeeds(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    quota: dict[str, Any],
    retry_delays: list[float],
    code: int,
    k8s_status: StatusBody,
) -> None:
    kmock["patch"][:2] << code << k8s_status(code, REASONS[code])
    patch = {"metadata": {"labels": {"x": "y"}}}

    returned = await patch_quota(api, "team", "a", patch)

    assert [r.data for r in kmock] == [patch] * 3  # the same request each time
    assert retry_delays == [0.2, 0.4]
    assert returned["metadata"]["labels"] == {"x": "y"}


@pytest.mark.parametrize("code", [409, 500])
async def test_a_transient_refusal_of_a_status_patch_is_retried(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    quota: dict[str, Any],
    code: int,
    k8s_status: StatusBody,
) -> None:
    kmock["patch"][:1] << code << k8s_status(code, REASONS[code])
    returned = await through_status(api).write_quota("team", "a", {}, {"cpu": "1"})
    assert len(kmock) == 2
    assert returned["status"] == {"used": {"cpu": "1"}}


async def test_retries_give_up_after_five_attempts(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    quota: dict[str, Any],
    retry_delays: list[float],
    k8s_status: StatusBody,
) -> None:
    kmock["patch"] << 503 << k8s_status(503, "ServiceUnavailable")

    with pytest.raises(ApiException) as raised:
        await patch_quota(api, "team", "a", {"metadata": {"labels": {"x": "y"}}})

    assert raised.value.status == 503
    assert len(kmock) == 5
    assert retry_delays == [0.2, 0.4, 0.8, 1.6]


@pytest.mark.parametrize(
    ("code", "reason"),
    [(400, "BadRequest"), (403, "Forbidden"), (404, "NotFound"), (422, "Invalid")],
)
async def test_a_final_refusal_is_raised_at_once(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    quota: dict[str, Any],
    retry_delays: list[float],
    code: int,
    reason: str,
    k8s_status: StatusBody,
) -> None:
    kmock["patch"] << code << k8s_status(code, reason)

    with pytest.raises(ApiException) as raised:
        await patch_quota(api, "team", "a", {"spec": {"max": {"cpu": "-1"}}})

    assert raised.value.status == code
    assert len(kmock) == 1
    assert retry_delays == []


async def test_patching_a_missing_quota_raises_not_found(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, retry_delays: list[float]
) -> None:
    kmock.objects[QUOTAS, "team", "other"] = quota_body("other")  # the resource is known
    with pytest.raises(ApiException) as raised:
        await patch_quota(api, "team", "a", {"metadata": {"labels": {"x": "y"}}})
    assert raised.value.status == 404
    assert (len(kmock), retry_delays) == (1, [])


async def test_creating_an_existing_quota_returns_none_without_retrying(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    quota: dict[str, Any],
    retry_delays: list[float],
) -> None:
    assert await create_quota(api, quota_body()) is None
    assert len(kmock) == 1  # AlreadyExists is final: retrying cannot change it
    assert retry_delays == []


async def test_a_creation_refused_by_a_server_error_is_retried(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    def refuse_unstored(request: kmock.Request) -> None:
        del kmock.objects[QUOTAS, "team", "new"]  # KMock stores before answering: undo it
        raise KubernetesError(500, "InternalError", "etcd unavailable")

    kmock["post"][:1] << refuse_unstored
    created = await create_quota(api, quota_body("new"))
    assert created is not None and created["metadata"]["name"] == "new"
    assert len(kmock) == 2


async def test_a_creation_stored_despite_a_server_error_returns_none_on_the_retry(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """The object exists after all (409 on the retry): someone created it, the watch brings it."""
    kmock["post"][:1] << 500 << k8s_status(500, "InternalError")
    assert await create_quota(api, quota_body("new")) is None
    assert len(kmock) == 2
    assert kmock.objects[QUOTAS, "team", "new"] >= {"spec": {"max": {"cpu": "4"}}}


async def test_a_creation_refused_as_invalid_is_raised(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock["post"] << 422 << k8s_status(422, "Invalid")
    with pytest.raises(ApiException) as raised:
        await create_quota(api, quota_body("new"))
    assert (raised.value.status, len(kmock)) == (422, 1)


# -- the writer against a merge-patch server ------------------------------------------------------


async def test_the_writers_patches_converge_on_a_merge_patch_server(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    """What the writer sends, merged by the server, is what the next diff expects: no rewrite.

    The object holds a ``status.used`` key the quota no longer tracks; a merge patch keeps keys it
    does not mention, so the write must delete it explicitly.
    """
    stale = quota_body(status={"used": {"cpu": "1", "nvidia.com/gpu": "2"}})
    kmock.objects[QUOTAS, "team", "a"] = stale
    state = ControllerState.create(EngineSettings())
    state.on_quota(stale)
    writer = Writer(KubeCluster(api), state, Settings(identity="test"))

    for change in pending_writes(state, state.engine.solve_tree("")):
        assert await writer.write(change)

    assert [r.headers["Content-Type"] for r in kmock] == [MERGE_PATCH]  # one patch: both
    stored = kmock.objects[QUOTAS, "team", "a"].raw
    assert stored["status"]["used"] == {"cpu": "0"}
    assert stored["metadata"]["annotations"][keys.ANNO_REQUEST] == '{"cpu":"0"}'
    assert pending_writes(state, state.engine.solve_tree("")) == []
