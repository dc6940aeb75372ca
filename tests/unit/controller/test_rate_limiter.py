"""The eviction rate limit: a token bucket of ``rate`` per second."""

from __future__ import annotations

import asyncio

import pytest

from elasticquota.controller.enforcement.evictions import RateLimiter


@pytest.mark.looptime
async def test_at_most_rate_acquisitions_per_second_after_a_burst() -> None:
    loop = asyncio.get_running_loop()
    limiter = RateLimiter(2.0, clock=loop.time)
    start = loop.time()
    times = []
    for _ in range(6):
        await limiter.acquire()
        times.append(round(loop.time() - start, 3))
    assert times == [0.0, 0.0, 0.5, 1.0, 1.5, 2.0]


@pytest.mark.looptime
async def test_revocation_and_preemption_share_one_budget() -> None:
    """The operator hands one limiter to both: together they stay within the rate."""
    loop = asyncio.get_running_loop()
    shared = RateLimiter(2.0, clock=loop.time)
    start = loop.time()
    times: list[float] = []

    async def user() -> None:
        for _ in range(3):
            await shared.acquire()
            times.append(round(loop.time() - start, 3))

    await asyncio.gather(user(), user())
    assert sorted(times) == [0.0, 0.0, 0.5, 1.0, 1.5, 2.0]


@pytest.mark.looptime
async def test_a_fractional_rate_is_one_acquisition_every_one_over_rate_seconds() -> None:
    """0.2 per second: one at once, then one every 5 s (a bucket capped at the rate itself
    never reached one token, and revocation stopped silently)."""
    loop = asyncio.get_running_loop()
    limiter = RateLimiter(0.2, clock=loop.time)
    start = loop.time()
    times = []
    for _ in range(3):
        await asyncio.wait_for(limiter.acquire(), timeout=60)
        times.append(round(loop.time() - start, 3))
    assert times == [0.0, 5.0, 10.0]


@pytest.mark.looptime
@pytest.mark.parametrize("rate", [5.0, 10.0, 3.0, 0.3])
async def test_a_refill_short_of_a_token_by_float_error_alone_is_a_token(rate: float) -> None:
    """At 5 a second, 0.2 s refills 0.99999999999994 tokens: the limiter slept the 1e-14 s left,
    which a loop's time does not show, and waited for ever (an enforcement harness hung)."""
    loop = asyncio.get_running_loop()
    reads = 0

    def clock() -> float:
        nonlocal reads
        reads += 1
        if reads > 1000:
            raise AssertionError(f"the limiter spins at loop time {loop.time()}")
        return loop.time()

    limiter = RateLimiter(rate, clock=clock)
    start = loop.time()
    for _ in range(60):
        await limiter.acquire()
    burst = max(1.0, rate)
    assert loop.time() - start == pytest.approx((60 - int(burst)) / rate, abs=1e-3)
    assert reads < 200


def test_a_rate_that_is_not_positive_is_refused() -> None:
    for rate in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="positive rate"):
            RateLimiter(rate)
