"""kube.errors: which failures are transient, how they are retried, how they are described.

Rules (kube/errors.py): 409 (conflict), 429 (throttled), 5xx and broken connections are retried
with exponential backoff (doubling from ``first_delay``, capped at ``max_delay``) up to
``attempts`` times; everything else is raised at once; ``describe`` gives the status and the
server's message in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import kmock
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import describe, is_retryable, with_retries
from elasticquota.kube.quotas import patch_quota

QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"

StatusBody = Callable[[int, str], dict[str, Any]]


@pytest.mark.parametrize("code", [409, 429, 500, 502, 503, 504])
def test_conflicts_throttling_and_server_errors_are_transient(code: int) -> None:
    assert is_retryable(ApiException(status=code))


@pytest.mark.parametrize("code", [0, 400, 401, 403, 404, 405, 410, 415, 422])
def test_client_errors_are_final(code: int) -> None:
    assert not is_retryable(ApiException(status=code))


@pytest.mark.parametrize(
    "error",
    [
        ConnectionResetError(),
        ConnectionRefusedError(),
        TimeoutError(),
        TimeoutError(),
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientConnectionError("connection lost"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_broken_connections_are_transient(error: BaseException) -> None:
    assert is_retryable(error)


@pytest.mark.parametrize("error", [ValueError("bad"), KeyError("x"), RuntimeError()])
def test_programming_errors_are_final(error: BaseException) -> None:
    assert not is_retryable(error)


async def test_the_backoff_doubles_up_to_its_cap(retry_delays: list[float]) -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 8:
            raise ApiException(status=503)
        return "done"

    assert await with_retries(flaky, "test", attempts=8, first_delay=0.5, max_delay=3.0) == "done"
    assert retry_delays == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0]


async def test_a_final_error_is_raised_without_delay(retry_delays: list[float]) -> None:
    async def refused() -> None:
        raise ApiException(status=403)

    with pytest.raises(ApiException):
        await with_retries(refused, "test")
    assert retry_delays == []


async def test_a_dropped_connection_during_a_patch_is_retried(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, retry_delays: list[float]
) -> None:
    """aiohttp does not resend a PATCH on a dropped connection: the retry loop must."""
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}

    def drop(request: kmock.Request) -> None:
        raw = request._raw_request
        assert raw is not None and raw.transport is not None
        raw.transport.close()

    kmock["patch"][:1] << drop
    returned: dict[str, Any] = await patch_quota(
        api, "team", "a", {"metadata": {"labels": {"x": "y"}}}
    )

    assert len(kmock) == 2
    assert retry_delays == [0.2]
    assert returned["metadata"]["labels"] == {"x": "y"}


async def test_an_api_error_is_described_by_its_status_and_the_servers_message(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, k8s_status: StatusBody
) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    kmock["patch"] << 422 << k8s_status(422, "Invalid")
    with pytest.raises(ApiException) as raised:
        await patch_quota(api, "team", "a", {"spec": {}})
    assert describe(raised.value) == "HTTP 422: injected 422"


def test_other_errors_are_described_by_their_type() -> None:
    assert describe(ConnectionResetError("peer gone")) == "ConnectionResetError: peer gone"
