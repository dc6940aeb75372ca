"""The start-up steps of kube against KMock: reading the API server's version (whether it has pod
scheduling gates), and the runner's gating step that reads it.

Rules (kube/pods.py ``supports_scheduling_gates``, kube/errors.py): a start-up step retries its
transient failures (5xx, timeouts, broken connections) with backoff, ``START_UP_ATTEMPTS`` in all,
since a failure there stops the operator; a permanent one (403) is raised at once. The gating
loop reads the version right after the initial listing, on every replica: one failed request
used to stop the operator (``Operator._guarded`` sets the stop flag); a refusal still stops it,
saying what could not be read.
(The reserved namespace, the other step, is in tests/unit/kube/test_start_up_steps.py: KMock
cannot serve a POST to ``/api/v1/namespaces``.)
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.runner import Operator
from elasticquota.kube.errors import START_UP_ATTEMPTS
from elasticquota.kube.pods import supports_scheduling_gates

StatusBody = Callable[[int, str], dict[str, Any]]
#: kubernetes_asyncio asks for ``/version/``.
VERSION = "get /version/"


def version(minor: str) -> dict[str, str]:
    return {
        "major": "1",
        "minor": minor,
        "gitVersion": f"v1.{minor}.0",
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2024-01-01T00:00:00Z",
        "goVersion": "go1.21",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def version_reads(server: kmock.KubernetesEmulator) -> int:
    return sum(1 for request in server if request.url.path == "/version/")


async def test_a_version_read_that_fails_once_is_retried(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    retry_delays: list[float],
) -> None:
    kmock[VERSION][:1] << 503 << k8s_status(503, "ServiceUnavailable")
    kmock[VERSION] << version("29")
    assert await supports_scheduling_gates(api) == (True, "v1.29.0")
    assert version_reads(kmock) == 2
    assert retry_delays == [0.2]


@pytest.mark.parametrize(
    ("status", "reason", "reads"),
    [(503, "ServiceUnavailable", START_UP_ATTEMPTS), (403, "Forbidden", 1)],
    ids=["given-up-after-the-start-up-attempts", "refused-raised-at-once"],
)
async def test_a_version_read_that_keeps_failing_is_raised(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    k8s_status: StatusBody,
    status: int,
    reason: str,
    reads: int,
) -> None:
    kmock[VERSION] << status << k8s_status(status, reason)
    with pytest.raises(ApiException) as raised:
        await supports_scheduling_gates(api)
    assert raised.value.status == status
    assert version_reads(kmock) == reads


# -- the runner's gating step -------------------------------------------------------------------


@pytest.fixture
def replica(api: client.ApiClient) -> Any:
    """What ``Operator._gate`` and ``_guarded`` use of an operator, synced, its client on KMock."""
    synced = asyncio.Event()
    synced.set()
    return types.SimpleNamespace(
        state=types.SimpleNamespace(synced=synced), api=api, stop_flag=asyncio.Event()
    )


async def test_a_version_read_that_failed_once_does_not_stop_the_operator(
    kmock: kmock.KubernetesEmulator,
    k8s_status: StatusBody,
    caplog: pytest.LogCaptureFixture,
    replica: Any,
) -> None:
    kmock[VERSION][:1] << 503 << k8s_status(503, "ServiceUnavailable")
    kmock[VERSION] << version("26")
    await Operator._guarded(replica, Operator._gate(replica), "gating")
    assert not replica.stop_flag.is_set()
    assert version_reads(kmock) == 2
    assert "has no pod scheduling gates" in caplog.text


async def test_a_refused_version_read_stops_the_operator_and_says_why(
    kmock: kmock.KubernetesEmulator,
    k8s_status: StatusBody,
    caplog: pytest.LogCaptureFixture,
    replica: Any,
) -> None:
    kmock[VERSION] << 403 << k8s_status(403, "Forbidden")
    await Operator._guarded(replica, Operator._gate(replica), "gating")
    assert replica.stop_flag.is_set()
    assert version_reads(kmock) == 1
    assert "cannot read the API server's version: HTTP 403" in caplog.text
