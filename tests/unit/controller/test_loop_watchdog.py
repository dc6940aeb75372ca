"""The watchdog says where the event loop is held, once per stall
(controller/observability/loopprobe.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable

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


def spin_for(seconds: float) -> None:
    """Stands for code that runs on a CPU (and holds the interpreter)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _cpu_shares(report: str) -> tuple[float, float]:
    match = re.search(
        r"its thread ran ([0-9.]+) s of it, the process's other threads ([0-9.]+)", report
    )
    assert match is not None, report
    return float(match.group(1)), float(match.group(2))


async def _report_of(hold: Callable[[], None], caplog: pytest.LogCaptureFixture) -> str:
    watchdog = StallWatchdog(after=0.15, period=0.02).start()
    probe = asyncio.create_task(probe_loop(Metrics(), period=0.02, watchdog=watchdog))
    try:
        await asyncio.sleep(0.1)
        with caplog.at_level(
            logging.WARNING, logger="elasticquota.controller.observability.loopprobe"
        ):
            hold()
            await asyncio.sleep(0.05)
        (report,) = [r.getMessage() for r in caplog.records if "has been held" in r.message]
        return report
    finally:
        probe.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await probe
        watchdog.stop()


async def test_a_stall_the_loop_ran_through_is_told_from_one_it_waited_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran_loop, ran_others = _cpu_shares(await _report_of(lambda: spin_for(0.4), caplog))
    caplog.clear()

    def wait_while_another_thread_runs() -> None:
        worker = threading.Thread(target=spin_for, args=(0.4,))
        worker.start()
        worker.join()  # the loop's thread waits, as for the interpreter lock held by a worker

    waited_loop, others = _cpu_shares(await _report_of(wait_while_another_thread_runs, caplog))
    # Shares, not amounts: on a busy machine a thread that spins gets only part of a CPU.
    assert ran_loop > ran_others
    assert others > waited_loop


async def test_a_stall_a_worker_ran_through_shows_the_workers_code(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool_idle = threading.Event()

    def deep_in_a_call_stack(depth: int) -> None:
        """The spin under more frames than a report shows: the innermost ones must be shown."""
        if depth:
            deep_in_a_call_stack(depth - 1)
        else:
            spin_for(0.4)

    def wait_while_a_worker_spins() -> None:
        worker = threading.Thread(target=deep_in_a_call_stack, args=(12,), name="solve worker")
        idle = threading.Thread(target=pool_idle.wait, name="idle worker", daemon=True)
        idle.start()
        worker.start()
        worker.join()

    try:
        report = await _report_of(wait_while_a_worker_spins, caplog)
    finally:
        pool_idle.set()
    assert "and thread solve worker in:" in report
    assert "in spin_for" in report
    assert "idle worker" not in report  # waiting for work: not what holds the loop
