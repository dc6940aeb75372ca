"""The writer and the diffs it sends: what each quota's object needs to show its results.

``pending_writes`` diffs a tree's results against the quota objects as last seen
(``core.decisions.diff``); ``pending_writes_in_slices`` does it yielding to the event loop (the
tree loops' way: the diff called directly, quota after quota), and ``moved_in_slices`` tells which
changed results write differently from those seen at the last pass. ``Writer.write_all`` sends
the writes, calling the ``Cluster`` port itself (no call of ours in between: see
docs/architecture.md, "A pod event's path to an annotation"), and keeps what the cluster answered
as the object the next diff reads (``ControllerState.keep_written``: not intake, the watch brings
the object to its reader).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.api import Body
from elasticquota.controller.cluster import Cluster
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.diff import QuotaWrite, quota_write, writes_alike
from elasticquota.core.generic.timeslice import SLICE_BUDGET, TimeSlice
from elasticquota.core.solve.results import QuotaResult
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog
from elasticquota.settings import Settings

logger = logging.getLogger(__name__)

#: Quotas diffed between two yields to the event loop (~50 ms of work).
DIFF_SLICE = 500

#: How one quota's result is diffed against its object's annotations and status.
QuotaDiff = Callable[[QuotaResult, Mapping[str, str], Mapping[str, Any] | None], QuotaWrite]


@dataclass(slots=True)
class WriteStats:
    """Counters for logs and benchmarks."""

    writes: int = 0
    failures: int = 0
    solves: int = 0


class Writer:
    """Sends quota writes through the ``Cluster``: each change's annotations and ``status.used``
    in one write (``Cluster.write_quota``: one merge patch where the CRD has no status
    subresource); the object each write returns becomes the current one (a dry run returns none,
    so memory keeps what the cluster holds).

    At most ``write_concurrency`` requests are in flight at once, whoever asks: every tree's loop
    and the problem reporter share one writer. Each request is bounded in time by the port. A
    write the API refuses for good (e.g. 422) is logged at WARNING each time; transient failures
    (the API unreachable or struggling) once per outage (``kube.outages``).
    """

    def __init__(
        self,
        cluster: Cluster,
        state: ControllerState,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        diff: QuotaDiff = quota_write,
    ) -> None:
        self._cluster = cluster
        #: How a result is diffed against its object
        #: (``core.decisions.diff.quota_write``; a test counts).
        self.diff = diff
        self._state = state
        self._slots = asyncio.Semaphore(settings.write_concurrency)
        self.stats = WriteStats()
        self._outage = OutageLog(logger, "quota writes", clock)

    async def write(self, change: QuotaWrite) -> bool:
        """Apply one quota's changes; False when the API refused them (retried next pass)."""
        (written,) = await self.write_all([change])
        return written

    async def write_all(self, changes: list[QuotaWrite]) -> list[bool]:
        """Send each change; the outcomes in order (False: the API refused it, and it is diffed
        again at the next pass).

        The port is called from here, each write in a task of its own while a slot is free: a
        task per write in flight, not per change (thousands of changes in a pass never put
        thousands of tasks on the event loop)."""
        cluster, outcomes = self._cluster, [True] * len(changes)
        waiting = collections.deque(i for i, change in enumerate(changes) if not change.empty)
        in_flight: dict[asyncio.Task[Body | None], int] = {}
        answered: asyncio.Queue[asyncio.Task[Body | None]] = asyncio.Queue()
        try:
            while waiting or in_flight:
                while waiting and not (in_flight and self._slots.locked()):
                    await self._slots.acquire()  # waits only while none of ours is in flight
                    index = waiting.popleft()
                    change = changes[index]
                    write = cluster.write_quota(
                        change.namespace, change.name, change.annotations, change.used
                    )
                    task = asyncio.create_task(write)
                    task.add_done_callback(answered.put_nowait)
                    in_flight[task] = index
                done = [await answered.get()]
                while not answered.empty():  # every answer in, before the next writes go
                    done.append(answered.get_nowait())
                self._answers(done, in_flight, changes, outcomes)
        finally:
            for task in in_flight:
                task.cancel()
                self._slots.release()
        return outcomes

    def _answers(
        self,
        done: list[asyncio.Task[Body | None]],
        in_flight: dict[asyncio.Task[Body | None], int],
        changes: list[QuotaWrite],
        outcomes: list[bool],
    ) -> None:
        """Take in the answers of the writes ``done`` (their slots given back): the object each
        returned is kept for the next diff (not intake: the watch brings it to the reader), a
        refusal is counted and logged (its change's outcome False)."""
        for task in done:
            self._slots.release()
            index = in_flight.pop(task)
            change, error = changes[index], task.exception()
            if error is not None:
                outcomes[index] = False
                self._refused(change, error)
                continue
            self._state.keep_written(task.result())
            self.stats.writes += 1
            self._outage.succeeded()
            logger.debug("wrote %s/%s", change.namespace, change.name)

    def _refused(self, change: QuotaWrite, error: BaseException) -> None:
        self.stats.failures += 1
        if isinstance(error, NotLeadingError):  # the Lease was lost (said by the elector)
            logger.debug("writing %s/%s: %s", change.namespace, change.name, error)
        else:
            self._outage.failed(f"{change.namespace}/{change.name}", error)


def pending_writes(
    state: ControllerState,
    results: Mapping[str, QuotaResult],
    names: Iterable[str] | None = None,
    diff: QuotaDiff = quota_write,
) -> list[QuotaWrite]:
    """The writes one tree needs: only quotas that exist as objects and differ from their result.

    ``names``: diff only these quotas (sorted by name; unknown names are skipped); all of them
    (in the results' order) when None. ``diff``: how one result is diffed against its object.
    """
    chosen = _chosen(results, names)
    return [change for result in chosen if (change := _write_for(state, result, diff)) is not None]


async def pending_writes_in_slices(
    state: ControllerState,
    results: Mapping[str, QuotaResult],
    names: Iterable[str] | None = None,
    size: int = DIFF_SLICE,
    budget: float = SLICE_BUDGET,
    diff: QuotaDiff = quota_write,
) -> list[QuotaWrite]:
    """``pending_writes``, yielding to the event loop after every ``size`` quotas or once a slice
    has run for its time budget (``TimeSlice``), whichever comes first: a pass over every quota of
    a 10,000-quota tree (start-up, a new leader) takes about a second."""
    chosen, quotas = _chosen(results, names), state.quotas
    writes: list[QuotaWrite] = []
    stretch = TimeSlice(budget)
    for position, result in enumerate(chosen, start=1):
        current = quotas.get((result.namespace, result.name))
        if current is not None:
            change = diff(result, current.annotations, current.status)
            if not change.empty:
                writes.append(change)
        if position < len(chosen) and (position % size == 0 or stretch.due()):
            await asyncio.sleep(0)
            stretch.restart()
    return writes


def _chosen(results: Mapping[str, QuotaResult], names: Iterable[str] | None) -> list[QuotaResult]:
    """The results to diff: all of them (in the results' order) when ``names`` is None, else
    those named (sorted by name; unknown names are skipped)."""
    if names is None:
        return list(results.values())
    return [results[name] for name in sorted(names) if name in results]


def _write_for(state: ControllerState, result: QuotaResult, diff: QuotaDiff) -> QuotaWrite | None:
    """What the quota's object needs to show ``result``; None when it shows it (or is gone)."""
    current = state.quotas.get((result.namespace, result.name))
    if current is None:
        return None
    change = diff(result, current.annotations, current.status)
    return None if change.empty else change


async def moved_in_slices(
    changed: Iterable[str],
    seen: Mapping[str, QuotaResult],
    results: Mapping[str, QuotaResult],
    budget: float = SLICE_BUDGET,
) -> set[str]:
    """The ``changed`` quotas whose results write differently from those ``seen`` at the last
    pass, yielding to the event loop once a stretch has run for its time budget (a burst changes
    every quota of a 10,000-quota tree: half a second in one go on a busy machine)."""
    moved: set[str] = set()
    stretch = TimeSlice(budget)
    for name in changed:
        if not _written_alike(seen.get(name), results[name]):
            moved.add(name)
        if stretch.due():
            await asyncio.sleep(0)
            stretch.restart()
    return moved


def _written_alike(before: QuotaResult | None, now: QuotaResult) -> bool:
    """The quota's object, in line with ``before`` (checked at the last pass), is in line now."""
    return before is not None and writes_alike(before, now)
