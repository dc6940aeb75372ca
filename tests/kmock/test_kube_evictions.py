"""kube.evictions against KMock: the Eviction request, the policy/v1beta1 fallback, and outcomes.

Rules (kube/evictions.py): a pod is evicted by POSTing an Eviction to its ``eviction`` subresource,
``policy/v1`` first; a server that does not know that version (400 "no kind Eviction is registered
for version policy/v1", as Kubernetes before 1.22) gets ``policy/v1beta1``, and keeps getting it.
A 429 (a PodDisruptionBudget) leaves the pod: BLOCKED at once, without a retry (the next round asks
again). A 404 means it is gone. Given the creation time of the pod decided about, the pod is read
first: gone, or created at another time (recreated under the name since), it is GONE without an
eviction; else the Eviction carries its uid as ``deleteOptions.preconditions.uid`` (in both
versions), and the API server's 409 for a pod recreated after the read is GONE, not retried. The
outcome comes with the uid read (for the Events about the pod; none read: ""). Transient errors
(5xx) are retried; other errors raise, as ``EvictionError`` from the error, with the uid read too
(the Event that says why the pod stays names it), described and judged as the error itself; a
failed read of the pod raises as it is (no uid was read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kmock_requests import only_request
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import describe, is_retryable, status_of
from elasticquota.kube.evictions import EvictionError, EvictionOutcome, EvictionResult, Evictor

EVICTION_URL = "/api/v1/namespaces/team/pods/p/eviction"
StatusBody = Callable[[int, str], dict[str, Any]]
UNKNOWN_V1 = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": 'Eviction in version "v1" cannot be handled as a Eviction: no kind "Eviction" '
    'is registered for version "policy/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"',
    "reason": "BadRequest",
    "code": 400,
}


def versions(kmock: kmock.KubernetesEmulator) -> list[str]:
    return [request.data["apiVersion"] for request in kmock if request.method == kmock.method.POST]


async def test_an_eviction_is_a_policy_v1_eviction_of_the_pod(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    assert (await Evictor(api).evict("team", "p")).outcome is EvictionOutcome.EVICTED
    request = only_request(kmock, kmock.method.POST, EVICTION_URL)
    assert request.data == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "team"},
    }


async def test_an_old_server_gets_policy_v1beta1_from_then_on(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    kmock["post"][:1] << 400 << UNKNOWN_V1
    evictor = Evictor(api)
    assert (await evictor.evict("team", "p")).outcome is EvictionOutcome.EVICTED
    assert (await evictor.evict("team", "p")).outcome is EvictionOutcome.EVICTED
    assert versions(kmock) == ["policy/v1", "policy/v1beta1", "policy/v1beta1"]


async def test_a_disruption_budget_refusal_leaves_the_pod_after_one_request(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
) -> None:
    kmock["post"] << 429 << k8s_status(429, "TooManyRequests")
    assert (await Evictor(api).evict("team", "p")).outcome is EvictionOutcome.BLOCKED
    only_request(kmock, kmock.method.POST, EVICTION_URL)  # not retried: the next round asks
    assert retry_delays == []


async def test_a_server_error_is_retried(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock["post"][:1] << 503 << k8s_status(503, "ServiceUnavailable")
    assert (await Evictor(api).evict("team", "p")).outcome is EvictionOutcome.EVICTED
    assert versions(kmock) == ["policy/v1", "policy/v1"]


async def test_a_pod_that_is_gone_is_not_an_error(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock["post"] << 404 << k8s_status(404, "NotFound")
    assert (await Evictor(api).evict("team", "p")).outcome is EvictionOutcome.GONE


async def test_a_refusal_for_another_reason_is_raised(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock["post"] << 403 << k8s_status(403, "Forbidden")
    with pytest.raises(EvictionError) as raised:
        await Evictor(api).evict("team", "p")
    assert isinstance(raised.value.__cause__, ApiException)
    assert (status_of(raised.value), raised.value.uid) == (403, "")  # no pod read, no uid


UID = "0f3c9a52-5d8e-4c61-9e0b-7a1d2b3c4d5e"
CREATED = "2026-11-27T10:00:00Z"
POD_URL = "/api/v1/namespaces/team/pods/p"


def the_pod(kmock: kmock.KubernetesEmulator, created: str = CREATED) -> None:
    """Pod team/p as the API server holds it, created at ``created``."""
    metadata = {"name": "p", "namespace": "team", "uid": UID, "creationTimestamp": created}
    kmock.objects["v1/pods", "team", "p"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
    }


async def test_the_pod_decided_about_is_read_then_evicted_by_its_uid(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    the_pod(kmock)
    assert (await Evictor(api).evict("team", "p", CREATED)).outcome is EvictionOutcome.EVICTED
    read, request = list(kmock)
    assert (read.method, read.url.path) == (kmock.method.GET, POD_URL)
    assert (request.method, request.url.path) == (kmock.method.POST, EVICTION_URL)
    assert request.data == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "team"},
        "deleteOptions": {"preconditions": {"uid": UID}},
    }


async def test_the_v1beta1_fallback_keeps_the_uid(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    the_pod(kmock)
    kmock["post"][:1] << 400 << UNKNOWN_V1
    assert (await Evictor(api).evict("team", "p", CREATED)).outcome is EvictionOutcome.EVICTED
    posts = [request.data for request in kmock if request.method == kmock.method.POST]
    assert [post["apiVersion"] for post in posts] == ["policy/v1", "policy/v1beta1"]
    assert all(post["deleteOptions"] == {"preconditions": {"uid": UID}} for post in posts)


@pytest.mark.parametrize("code", [201, 429], ids=["evicted", "blocked"])
async def test_the_outcome_names_the_uid_of_the_pod_read(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody, code: int
) -> None:
    """The uid the eviction read comes back with its outcome, evicted or refused by a
    PodDisruptionBudget (the pod stays): the Events about the pod name it, so that ``kubectl
    describe pod`` lists them. No other request is made for it."""
    the_pod(kmock)
    if code == 429:
        kmock["post"] << 429 << k8s_status(429, "TooManyRequests")
    outcome = EvictionOutcome.EVICTED if code == 201 else EvictionOutcome.BLOCKED
    assert await Evictor(api).evict("team", "p", CREATED) == EvictionResult(outcome, UID)
    assert [request.method for request in kmock] == [kmock.method.GET, kmock.method.POST]


@pytest.mark.parametrize(
    ("code", "transient", "retries"), [(403, False, 0), (503, True, 2)], ids=["refused", "5xx"]
)
async def test_a_failed_eviction_names_the_uid_of_the_pod_read(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
    code: int,
    transient: bool,
    retries: int,
) -> None:
    """The pod stays, and the Event that says why names its uid (``kubectl describe pod``
    lists it): the failure, refused or a server error that outlasts the retries, carries the uid
    read before the request, and is described and judged as the error itself (for the caller's
    log: a refusal, or an outage)."""
    the_pod(kmock)
    kmock["post"] << code << k8s_status(code, "Failed")
    with pytest.raises(EvictionError) as raised:
        await Evictor(api).evict("team", "p", CREATED)
    assert raised.value.uid == UID
    assert isinstance(raised.value.__cause__, ApiException)
    assert describe(raised.value) == f"HTTP {code}: injected {code}"
    assert (status_of(raised.value), is_retryable(raised.value)) == (code, transient)
    assert len(retry_delays) == retries  # the 503: three requests, as before


async def test_a_failed_read_of_the_pod_is_raised_as_it_is(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    """No uid was read, and no eviction sent."""
    kmock["get"] << 403 << k8s_status(403, "Forbidden")
    with pytest.raises(ApiException) as raised:
        await Evictor(api).evict("team", "p", CREATED)
    assert raised.value.status == 403
    assert [request.method for request in kmock] == [kmock.method.GET]


async def test_without_a_creation_time_no_uid_is_known(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    the_pod(kmock)
    assert await Evictor(api).evict("team", "p") == EvictionResult(EvictionOutcome.EVICTED, "")
    only_request(kmock, kmock.method.POST, EVICTION_URL)


@pytest.mark.parametrize("held", ["2026-11-27T10:05:00Z", None], ids=["recreated", "gone"])
async def test_a_pod_recreated_under_the_name_or_gone_is_not_evicted(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, held: str | None
) -> None:
    if held is not None:
        the_pod(kmock, held)
    assert (await Evictor(api).evict("team", "p", CREATED)).outcome is EvictionOutcome.GONE
    assert [request.method for request in kmock] == [kmock.method.GET]


async def test_a_pod_recreated_after_the_read_is_gone_after_one_eviction(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
) -> None:
    """The API server's answer to a uid precondition another pod fails (rest.BeforeDelete)."""
    the_pod(kmock)
    kmock["post"] << 409 << k8s_status(409, "Conflict")
    assert (await Evictor(api).evict("team", "p", CREATED)).outcome is EvictionOutcome.GONE
    assert [request.method for request in kmock] == [kmock.method.GET, kmock.method.POST]
    assert retry_delays == []
