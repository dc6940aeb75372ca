"""The runner's start-up steps on a transient failure: the gating loop reads the API server's
version right after the initial listing, on every replica; one request that timed out used to
stop the operator (``_guarded`` sets the stop flag). It is retried now; a refusal still stops the
operator, saying what could not be read.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.runner import Operator

OLD_SERVER = client.VersionInfo(
    major="1", minor="26", git_version="v1.26.4", git_commit="0", git_tree_state="clean",
    build_date="2024-01-01T00:00:00Z", go_version="go1.21", compiler="gc", platform="linux/amd64",
)  # fmt: skip


@pytest.fixture
async def replica() -> AsyncIterator[Any]:
    """What ``Operator._gate`` and ``_guarded`` use of an operator, synced (its client sends
    nothing: ``version_answers`` replaces the request)."""
    synced = asyncio.Event()
    synced.set()
    async with client.ApiClient() as api:
        yield types.SimpleNamespace(
            state=types.SimpleNamespace(synced=synced), api=api, stop_flag=asyncio.Event()
        )


def version_answers(monkeypatch: pytest.MonkeyPatch, *failures: BaseException) -> list[int]:
    """``GET /version`` fails with these in turn, then answers 1.26 (no scheduling gates)."""
    reads: list[int] = []
    script = list(failures)

    async def get_code(_: client.VersionApi) -> client.VersionInfo:
        reads.append(1)
        if script:
            raise script.pop(0)
        return OLD_SERVER

    monkeypatch.setattr(client.VersionApi, "get_code", get_code)
    return reads


@pytest.mark.looptime
async def test_a_version_read_that_timed_out_once_does_not_stop_the_operator(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, replica: Any
) -> None:
    reads = version_answers(monkeypatch, TimeoutError())
    operator = replica
    await Operator._guarded(operator, Operator._gate(operator), "gating")
    assert not operator.stop_flag.is_set()
    assert len(reads) == 2
    assert "has no pod scheduling gates" in caplog.text


@pytest.mark.looptime
async def test_a_refused_version_read_stops_the_operator_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, replica: Any
) -> None:
    reads = version_answers(monkeypatch, ApiException(status=403, reason="Forbidden"))
    operator = replica
    await Operator._guarded(operator, Operator._gate(operator), "gating")
    assert operator.stop_flag.is_set()
    assert len(reads) == 1
    assert "cannot read the API server's version: HTTP 403: Forbidden" in caplog.text
