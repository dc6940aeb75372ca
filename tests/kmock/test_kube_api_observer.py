"""kube.client's observed ApiClient against KMock: every failed request is reported once.

Rules (kube/client.py): each HTTP attempt that fails is reported as ``(verb, code)``: the HTTP
status (also for replies read raw, like an eviction's), ``timeout`` when it takes longer than the
client's request timeout, ``connection`` when the server cannot be reached; successes are not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import kmock
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from ports import free_port

from elasticquota.kube.client import ObservedApiClient
from elasticquota.kube.evictions import EvictionOutcome, Evictor
from elasticquota.kube.quotas import (
    QUOTA_GROUP,
    QUOTA_PLURAL,
    QUOTA_VERSION,
    list_quotas,
    patch_quota,
)

if TYPE_CHECKING:
    from conftest import SilentServer

QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"
StatusBody = Callable[[int, str], dict[str, Any]]
Seen = list[tuple[str, str]]


async def test_successes_are_not_reported(
    kmock: kmock.KubernetesEmulator, observed: client.ApiClient, seen: Seen
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    await patch_quota(observed, "team", "a", {"metadata": {"labels": {"x": "y"}}})
    await list_quotas(observed)
    assert seen == []


async def test_each_failed_attempt_is_reported_with_its_status(
    kmock: kmock.KubernetesEmulator,
    observed: client.ApiClient,
    seen: Seen,
    k8s_status: StatusBody,
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    kmock["patch"][:2] << 409 << k8s_status(409, "Conflict")
    await patch_quota(observed, "team", "a", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(ApiException):
        await client.CustomObjectsApi(observed).get_namespaced_custom_object(
            QUOTA_GROUP, QUOTA_VERSION, "team", QUOTA_PLURAL, "missing"
        )
    kmock["get"] << 500 << k8s_status(500, "InternalError")
    with pytest.raises(ApiException):
        await list_quotas(observed)
    assert seen == [("patch", "409"), ("patch", "409"), ("get", "404"), ("list", "500")]


async def test_a_refused_eviction_read_raw_is_reported(
    kmock: kmock.KubernetesEmulator,
    observed: client.ApiClient,
    seen: Seen,
    k8s_status: StatusBody,
) -> None:
    kmock["post"] << 429 << k8s_status(429, "TooManyRequests")
    assert (await Evictor(observed).evict("team", "p")).outcome is EvictionOutcome.BLOCKED
    assert seen == [("evict", "429")]  # a refusal for now, not retried


async def test_an_unreachable_server_is_a_connection_failure(seen: Seen) -> None:
    configuration = client.Configuration(host=f"http://127.0.0.1:{free_port()}")
    async with ObservedApiClient(configuration, lambda *failure: seen.append(failure)) as api:
        with pytest.raises(OSError):
            await list_quotas(api)
    assert seen == [("list", "connection")]


async def test_a_request_that_hangs_is_a_timeout(seen: Seen, silent_server: SilentServer) -> None:
    configuration = silent_server.configuration
    async with ObservedApiClient(
        configuration, lambda *failure: seen.append(failure), request_timeout=0.2
    ) as api:
        with pytest.raises(TimeoutError):
            await list_quotas(api)
    assert seen == [("list", "timeout")]
