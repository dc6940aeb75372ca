"""kube.errors: which failures are transient, how they are retried, how they are described.

Rules (kube/errors.py): 409 (conflict), 429 (throttled), 5xx and broken connections are retried
with exponential backoff (doubling from ``first_delay``, capped at ``max_delay``) up to
``attempts`` times; everything else is raised at once; ``describe`` gives the status and the
server's message in one line; a ``CausedError`` (raised from an error, with its caller's
fields) is described, judged and given a status as that error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
import kmock
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import CausedError, describe, is_retryable, status_of, with_retries
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


def _drop(request: kmock.Request) -> None:
    """The connection closes before any answer."""
    raw = request._raw_request
    assert raw is not None and raw.transport is not None
    raw.transport.close()


def _cut(request: kmock.Request) -> None:
    """The status and part of the body, then the connection closes (a proxy or the API server
    restarting mid-answer: aiohttp's ClientPayloadError)."""
    raw = request._raw_request
    assert raw is not None and raw.transport is not None
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999\r\n\r\n"
    raw.transport.write(head + b'{"metadata": {')
    raw.transport.close()


@pytest.mark.parametrize("fault", [_drop, _cut], ids=["dropped", "cut-in-its-body"])
async def test_a_patch_whose_connection_fails_is_retried(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    retry_delays: list[float],
    fault: Callable[[kmock.Request], None],
) -> None:
    """aiohttp does not resend a PATCH on a dropped connection, nor one whose answer was cut
    off: the retry loop must (a patch is safe to send again)."""
    kmock.objects[QUOTAS, "team", "a"] = {"metadata": {"name": "a", "namespace": "team"}}
    kmock["patch"][:1] << fault
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


def test_a_failure_raised_from_its_cause_is_described_and_judged_as_its_cause() -> None:
    """What carries a caller's extra fields (an eviction's uid) reads as the error it wraps."""
    lost = CausedError(CausedError(ConnectionResetError("peer gone")))
    assert describe(lost) == "ConnectionResetError: peer gone"
    assert (is_retryable(lost), status_of(lost)) == (True, None)
    refused = CausedError(ApiException(status=403, reason="Forbidden"))
    assert (describe(refused), is_retryable(refused), status_of(refused)) == (
        "HTTP 403: Forbidden",
        False,
        403,
    )
