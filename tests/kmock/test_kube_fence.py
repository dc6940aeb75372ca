"""The writers' API client is fenced by the leader Lease (kube/client.py, kube/lease.py ``Fence``).

Rules: a write (any method but GET) is sent only while the fence is open — a closed fence refuses
it with ``NotLeadingError`` before anything leaves the process, whichever writer sends it (quota
patch, eviction, gate release, Event); reads always pass; a write in flight is abandoned when the
fence closes (its bound is what is left of the fence, not the longer request timeout), and is
reported as ``fenced``, not as a timeout, keeping its connection pool (the link is not to blame);
a write that hits the request timeout first is a ``timeout`` and retires its pool; a fence opens
for the renew deadline from the start of the renewal that succeeded and closes by itself.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import kmock
import pytest
from kubernetes_asyncio import client

from elasticquota.kube.client import ObservedApiClient
from elasticquota.kube.events import post_event
from elasticquota.kube.evictions import Evictor
from elasticquota.kube.fence import Fence, NotLeadingError
from elasticquota.kube.pods import set_scheduling_gates
from elasticquota.kube.quotas import list_quotas, patch_quota

if TYPE_CHECKING:
    from conftest import SilentServer

QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"
REQUEST_TIMEOUT = 25.0


@pytest.fixture
def fence() -> Fence:
    return Fence(renew_deadline=10.0)


@pytest.fixture
async def fenced(kmock: kmock.KubernetesEmulator, fence: Fence) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration(host=str(kmock.url))
    async with ObservedApiClient(
        configuration, lambda *failure: None, REQUEST_TIMEOUT, fence
    ) as api:
        yield api


def test_a_fence_is_open_for_the_renew_deadline_from_the_start_of_the_renewal() -> None:
    fence = Fence(renew_deadline=10.0)
    assert not fence.is_fresh()
    fence.renewed(time.monotonic() - 9.5)  # a renewal that started 9.5 s ago succeeded
    assert fence.is_fresh() and 0.4 < fence.remaining() <= 0.5
    fence.renewed(time.monotonic() - 10.1)
    assert not fence.is_fresh() and fence.remaining() == 0.0
    fence.renewed(time.monotonic())
    fence.close()
    assert not fence.is_fresh()


async def test_a_closed_fence_sends_no_write_of_any_writer(
    kmock: kmock.KubernetesEmulator, fenced: client.ApiClient
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    with pytest.raises(NotLeadingError, match=r"patch .*/elasticquotas/a"):
        await patch_quota(fenced, "team", "a", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(NotLeadingError):
        await Evictor(fenced).evict("team", "p")
    with pytest.raises(NotLeadingError):
        await set_scheduling_gates(fenced, "team", "p", [])  # a gate release
    with pytest.raises(NotLeadingError):
        pod = {"apiVersion": "v1", "kind": "Pod", "namespace": "team", "name": "p", "uid": "u"}
        await post_event(fenced, pod, "Evicted", "over its quota")
    assert list(kmock) == []  # nothing left the process

    assert [quota["metadata"]["name"] for quota in await list_quotas(fenced)] == ["a"]  # reads pass


async def test_an_open_fence_lets_writes_through(
    kmock: kmock.KubernetesEmulator, fenced: client.ApiClient, fence: Fence
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    fence.renewed(time.monotonic())
    await patch_quota(fenced, "team", "a", {"metadata": {"labels": {"x": "y"}}})
    assert [request.method for request in kmock] == [kmock.method.PATCH]


async def test_a_write_in_flight_is_abandoned_when_the_fence_closes(
    silent_server: SilentServer,
) -> None:
    """The link went silent (the server never answers): the write ends when the fence closes."""
    fence = Fence(renew_deadline=10.0)
    fence.renewed(time.monotonic() - 9.7)  # 0.3 s left
    started = time.monotonic()
    configuration = silent_server.configuration
    seen: list[tuple[str, str]] = []
    async with ObservedApiClient(
        configuration, lambda *f: seen.append(f), REQUEST_TIMEOUT, fence
    ) as api:
        pool = api.rest_client.pool_manager
        with pytest.raises(NotLeadingError):  # abandoned at 0.3 s; its retry never sent
            await patch_quota(api, "team", "a", {"metadata": {"labels": {"x": "y"}}})
        assert api.rest_client.pool_manager is pool  # the pool is not to blame: kept
    assert len(silent_server.connections) == 1
    assert time.monotonic() - started < 1.0  # not the 25-s request timeout
    assert seen == [("patch", "fenced")]  # not a timeout of the API server


async def test_a_write_that_hits_the_request_timeout_first_is_a_timeout(
    silent_server: SilentServer,
) -> None:
    fence = Fence(renew_deadline=10.0)
    fence.renewed(time.monotonic())  # 10 s left; the request gives up after 0.2 s
    seen: list[tuple[str, str]] = []
    configuration = silent_server.configuration
    async with ObservedApiClient(configuration, lambda *f: seen.append(f), 0.2, fence) as api:
        pool = api.rest_client.pool_manager
        with pytest.raises(TimeoutError):
            await api.request("PATCH", f"{configuration.host}/api/v1/namespaces/team/pods/p")
        assert api.rest_client.pool_manager is not pool  # retired: the link may be dead
    assert seen == [("patch", "timeout")]
