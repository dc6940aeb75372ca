"""A probe of the event loop: how long something else held it.

Event intake, the webhooks, the Lease renewal and the tree loops share one event loop, so nothing
may hold it for long (the operator's budget is ~100 ms). The probe asks to be woken every
``period`` seconds and records how late it was woken (``elastic_quota_event_loop_lag_seconds``,
and the longest since start-up); a lag above ``warn_after`` is logged once per occurrence with
its length, so a profile can be taken where it happens.

While the loop is held, a watchdog thread (``StallWatchdog``) logs once, at WARNING, where the
event loop's thread is: the code that holds it, which a lag measured afterwards cannot tell. The
report also says how much of the stall the loop's thread spent on a CPU (its own CPU clock), and
how much the process's other threads did meanwhile: a stall the loop's thread mostly ran is the
code in the stack; one it mostly waited through while other threads ran is the interpreter lock
held by a worker (a solve, the ``/metrics`` encoding); one in which nothing of the process ran is
the machine's CPUs busy with other processes (on a small node: the API server's own load).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from types import FrameType

from elasticquota.controller.metrics import Metrics

logger = logging.getLogger(__name__)

#: Seconds between two wake-ups of the probe.
PERIOD = 0.05
#: A lag above this is worth a log line (the tree loops' and the webhooks' budget is 0.1 s).
WARN_AFTER = 1.0


#: A watchdog reports where the loop is once it has not run for this long.
STACK_AFTER = 0.5
#: Frames of the held thread's stack in that report.
STACK_FRAMES = 12


class StallWatchdog:
    """A daemon thread that says, once per stall, what the event loop's thread is running when
    the loop has not beaten (``beat``) for ``after`` seconds."""

    def __init__(self, after: float = STACK_AFTER, period: float = PERIOD) -> None:
        self._after = after
        self._period = period
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._loop_clock = _thread_cpu_clock(self._loop_thread)
        self._beat_cpu = self._cpu_times()
        self._reported = False
        self._stop = threading.Event()
        self.reports = 0
        self._thread = threading.Thread(target=self._watch, name="loop watchdog", daemon=True)

    def start(self) -> StallWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def beat(self) -> None:
        """The loop ran (called from the loop's thread)."""
        self._beat = time.monotonic()
        self._beat_cpu = self._cpu_times()
        self._reported = False

    def _cpu_times(self) -> tuple[float, float] | None:
        """CPU seconds of the loop's thread and of the whole process (None: no thread clock)."""
        if self._loop_clock is None:
            return None
        try:
            return time.clock_gettime(self._loop_clock), time.process_time()
        except OSError:  # the thread is gone
            return None

    def _cpu_note(self) -> str:
        """`` (its thread ran X s of it, the process's other threads Y s)``, or nothing."""
        then, now = self._beat_cpu, self._cpu_times()
        if then is None or now is None:
            return ""
        loop_cpu = now[0] - then[0]
        others = max(0.0, now[1] - then[1] - loop_cpu)
        return (
            f" (its thread ran {loop_cpu:.2f} s of it, the process's other threads {others:.2f} s)"
        )

    def _watch(self) -> None:
        while not self._stop.wait(self._period):
            held = time.monotonic() - self._beat
            if held > self._after and not self._reported:
                self._reported = True
                self.reports += 1
                logger.warning(
                    "the event loop has been held for %.2f s%s, in:\n%s%s",
                    held,
                    self._cpu_note(),
                    self._where(),
                    self._busy_others(),
                )

    def _where(self) -> str:
        frame = sys._current_frames().get(self._loop_thread)
        if frame is None:
            return "(the event loop's thread is gone)"
        return "".join(traceback.format_stack(frame, limit=STACK_FRAMES)).rstrip()

    def _busy_others(self) -> str:
        """The innermost frames of the process's other threads that are not waiting for work:
        one of them held the interpreter when the loop's thread ran little of the stall."""
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        watchdog = self._thread.ident
        busy = []
        for ident, frame in sys._current_frames().items():
            if ident in (self._loop_thread, watchdog) or _idle(frame):
                continue
            stack = "".join(traceback.format_stack(frame, limit=OTHER_FRAMES)).rstrip()
            busy.append(f"\nand thread {names.get(ident, ident)} in:\n{stack}")
        return "".join(busy)


#: Where a thread waits for work (a pool's queue, a lock or condition): not running Python code.
IDLE_FUNCTIONS = frozenset(
    {"wait", "get", "_worker", "acquire", "select", "poll", "_wait_for_tstate_lock"}
)
#: How many of a busy other thread's innermost frames a report shows.
OTHER_FRAMES = 6


def _idle(frame: FrameType) -> bool:
    return frame.f_code.co_name in IDLE_FUNCTIONS


def _thread_cpu_clock(thread: int) -> int | None:
    """The CPU-time clock of ``thread`` (an ident of ``threading``), readable from any thread;
    None where the platform has none."""
    try:
        return time.pthread_getcpuclockid(thread)
    except (AttributeError, OSError):
        return None


async def probe_loop(
    metrics: Metrics,
    period: float = PERIOD,
    warn_after: float = WARN_AFTER,
    watchdog: StallWatchdog | None = None,
) -> None:
    """For ever: sleep ``period``, record how much later than asked the loop woke us (and tell
    ``watchdog`` that the loop runs)."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(period)
        if watchdog is not None:
            watchdog.beat()
        lag = max(0.0, loop.time() - asked - period)
        metrics.loop_lag(lag)
        if lag > warn_after:
            logger.warning("the event loop was held for %.2f s", lag)
