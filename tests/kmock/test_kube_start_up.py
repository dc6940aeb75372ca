"""The start-up steps of kube against KMock: reading the API server's version (whether it has pod
scheduling gates).

Rules (kube/pods.py ``supports_scheduling_gates``, kube/errors.py): a start-up step retries its
transient failures (5xx, timeouts, broken connections) with backoff, ``START_UP_ATTEMPTS`` in all,
since a failure there stops the operator; a permanent one (403) is raised at once.
(The reserved namespace, the other step, is in tests/unit/kube/test_start_up_steps.py: KMock
cannot serve a POST to ``/api/v1/namespaces``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kmock
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

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
