"""The watchdog says where the event loop is held, once per stall
(controller/observability/loopprobe.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.observability.loopprobe import StallWatchdog, probe_loop


def hold_the_loop_for(seconds: float) -> None:
    """Stands for work that holds the event loop."""
    time.sleep(seconds)


async def test_a_stall_is_reported_once_with_the_code_that_holds_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = StallWatchdog(after=0.1, period=0.02).start()
    probe = asyncio.create_task(probe_loop(Metrics(), period=0.02, watchdog=watchdog))
    try:
        await asyncio.sleep(0.1)  # the loop runs: no report
        assert watchdog.reports == 0
        with caplog.at_level(
            logging.WARNING, logger="elasticquota.controller.observability.loopprobe"
        ):
            hold_the_loop_for(0.4)
            await asyncio.sleep(0.1)
        assert watchdog.reports == 1
        (report,) = [r.getMessage() for r in caplog.records if "has been held" in r.message]
        assert "hold_the_loop_for" in report
    finally:
        probe.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await probe
        watchdog.stop()
