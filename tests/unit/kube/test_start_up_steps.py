"""The reserved namespace, a start-up step (kube/quotas.py ``ensure_namespace``): created unless it
exists (409 is final: it exists), transient failures retried (``START_UP_ATTEMPTS``: a failure
there stops the operator), a refusal (403) raised at once.

The namespace API is replaced by a script of answers: KMock cannot serve a POST to
``/api/v1/namespaces`` (tests/kmock/conftest.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import START_UP_ATTEMPTS
from elasticquota.kube.quotas import ensure_namespace


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    """A client that sends nothing: the calls it would make are replaced (``answering``)."""
    async with client.ApiClient() as unused:
        yield unused


def answering(monkeypatch: pytest.MonkeyPatch, *answers: BaseException | None) -> list[str]:
    """``create_namespace`` raises these in turn (None: created; past the end: created too);
    the names it was asked for, one per request."""
    asked: list[str] = []
    script = list(answers)

    async def create_namespace(_: client.CoreV1Api, body: dict[str, Any]) -> None:
        asked.append(body["metadata"]["name"])
        answer = script.pop(0) if script else None
        if answer is not None:
            raise answer

    monkeypatch.setattr(client.CoreV1Api, "create_namespace", create_namespace)
    return asked


@pytest.mark.looptime
async def test_a_namespace_creation_that_fails_for_a_moment_is_retried(
    monkeypatch: pytest.MonkeyPatch, api: client.ApiClient
) -> None:
    asked = answering(monkeypatch, ApiException(status=503), TimeoutError(), None)
    await ensure_namespace(api, "quota-system")
    assert asked == ["quota-system"] * 3


@pytest.mark.looptime
async def test_a_namespace_that_exists_is_one_request(
    monkeypatch: pytest.MonkeyPatch, api: client.ApiClient
) -> None:
    asked = answering(monkeypatch, ApiException(status=409, reason="AlreadyExists"))
    await ensure_namespace(api, "quota-system")
    assert len(asked) == 1


@pytest.mark.looptime
async def test_a_refused_namespace_creation_is_raised_at_once(
    monkeypatch: pytest.MonkeyPatch, api: client.ApiClient
) -> None:
    asked = answering(monkeypatch, ApiException(status=403, reason="Forbidden"))
    with pytest.raises(ApiException) as raised:
        await ensure_namespace(api, "quota-system")
    assert raised.value.status == 403 and len(asked) == 1


@pytest.mark.looptime
async def test_a_lasting_failure_is_given_up_after_the_start_up_attempts(
    monkeypatch: pytest.MonkeyPatch, api: client.ApiClient
) -> None:
    asked = answering(monkeypatch, *(ApiException(status=500) for _ in range(START_UP_ATTEMPTS)))
    with pytest.raises(ApiException):
        await ensure_namespace(api, "quota-system")
    assert len(asked) == START_UP_ATTEMPTS
