"""The writer and the diffs it sends: what each quota's object needs to show its results.

``pending_writes`` diffs a tree's results against the quota objects as last seen
(``core.decisions.diff``); ``pending_writes_in_slices`` does it yielding to the event loop, and
``moved_in_slices`` tells which changed results write differently from those seen at the last pass.
``Writer`` sends the writes through the ``Cluster`` port and keeps what the cluster answered as the
object the next diff reads (``ControllerState.keep_written``: not intake, the watch brings the
object to its reader).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.diff import QuotaWrite, quota_write, writes_alike
from elasticquota.core.generic.timeslice import SLICE_BUDGET, TimeSlice
from elasticquota.core.solve.results import QuotaResult
from elasticquota.kube.lease import NotLeadingError
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
    """Sends quota writes through the ``Cluster``: one merge patch for annotations, one for
    ``status.used``; the object each write returns becomes the current one (a dry run returns
    none, so memory keeps what the cluster holds).

    A write the API refuses for good (e.g. 422) is logged at WARNING each time; transient
    failures (the API unreachable or struggling) once per outage (``controller.outages``).
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
        self._settings = settings
        self._slots = asyncio.Semaphore(settings.write_concurrency)
        self.stats = WriteStats()
        self._outage = OutageLog(logger, "quota writes", clock)

    async def write(self, change: QuotaWrite) -> bool:
        """Apply one quota's changes; False when the API refused them (retried next pass)."""
        async with self._slots:
            try:
                await self._send(change)
            except Exception as error:  # the API refused: count it, try again next round
                self.stats.failures += 1
                if isinstance(error, NotLeadingError):  # the Lease was lost (said by the elector)
                    logger.debug("writing %s/%s: %s", change.namespace, change.name, error)
                else:
                    self._outage.failed(f"{change.namespace}/{change.name}", error)
                return False
        self.stats.writes += 1
        self._outage.succeeded()
        return True

    async def write_all(self, changes: list[QuotaWrite]) -> list[bool]:
        """``write`` each change (outcomes in order), by as many workers as writes may be in
        flight: a task per change would put thousands of tasks on the event loop at once."""
        outcomes = [False] * len(changes)
        pending = iter(enumerate(changes))

        async def worker() -> None:
            for index, change in pending:
                outcomes[index] = await self.write(change)

        workers = min(len(changes), self._settings.write_concurrency)
        await asyncio.gather(*(worker() for _ in range(workers)))
        return outcomes

    async def _send(self, change: QuotaWrite) -> None:
        cluster, namespace, name = self._cluster, change.namespace, change.name
        if change.annotations:
            patch = {"metadata": {"annotations": change.annotations}}
            self._keep(await cluster.patch_quota(namespace, name, patch))
        if change.used is not None:
            self._keep(await cluster.patch_quota_status(namespace, name, {"used": change.used}))
        logger.debug("wrote %s/%s", namespace, name)

    def _keep(self, body: dict[str, Any] | None) -> None:
        """The object as the cluster has it after a write (nothing when nothing was sent): kept
        for the next diff, not taken in (the watch brings it to the reader)."""
        self._state.keep_written(body)


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
    return _writes_for(state, _chosen(results, names), diff)


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
    chosen = _chosen(results, names)
    writes: list[QuotaWrite] = []
    stretch = TimeSlice(budget)
    for position, result in enumerate(chosen, start=1):
        change = _write_for(state, result, diff)
        if change is not None:
            writes.append(change)
        if position < len(chosen) and (position % size == 0 or stretch.due()):
            await asyncio.sleep(0)
            stretch.restart()
    return writes


def _chosen(results: Mapping[str, QuotaResult], names: Iterable[str] | None) -> list[QuotaResult]:
    return list(results.values()) if names is None else _results_named(results, names)


def _writes_for(
    state: ControllerState, chosen: Iterable[QuotaResult], diff: QuotaDiff
) -> list[QuotaWrite]:
    return [change for result in chosen if (change := _write_for(state, result, diff)) is not None]


def _write_for(state: ControllerState, result: QuotaResult, diff: QuotaDiff) -> QuotaWrite | None:
    """What the quota's object needs to show ``result``; None when it shows it (or is gone)."""
    current = state.quotas.get((result.namespace, result.name))
    if current is None:
        return None
    change = diff(result, current.annotations, current.status)
    return None if change.empty else change


def _results_named(results: Mapping[str, QuotaResult], names: Iterable[str]) -> list[QuotaResult]:
    return [results[name] for name in sorted(names) if name in results]


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
