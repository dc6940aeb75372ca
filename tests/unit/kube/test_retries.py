"""Retries of API calls: a hung attempt is abandoned after its timeout and tried again."""

from __future__ import annotations

import asyncio

import pytest

from elasticquota.kube.errors import with_retries


@pytest.mark.looptime
async def test_a_hung_attempt_is_abandoned_after_its_timeout_and_retried() -> None:
    attempts = 0

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(3600)  # a request that never answers
        return "answered"

    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await with_retries(call, "a hung call", attempt_timeout=30.0) == "answered"
    assert attempts == 2
    assert 30.0 <= loop.time() - started < 31.0


@pytest.mark.looptime
async def test_an_attempt_that_always_hangs_ends_in_a_timeout_error() -> None:
    async def call() -> str:
        await asyncio.sleep(3600)
        return "never"

    with pytest.raises(TimeoutError):
        await with_retries(call, "a dead call", attempts=3, attempt_timeout=10.0)
