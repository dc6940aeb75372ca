"""Level-based control: one loop per quota tree solves, diffs and writes; writes only on change.

Events only update memory and wake the loops of the trees they touched. A pod event wakes its
trees' loops itself (``ControllerState.tree_wakes``: the tree it counted in before and the one it
counts in now), with no dispatcher in between. Every other change sets ``trees_changed`` for the
dispatcher (``Reconciler``), which brings the topology up to date off the event loop and wakes the
loops of the trees out of date or with changed results not yet diffed (a node change: the default
tree; a topology change: all of them) and the trees of the quota objects seen since (edited by
hand, relisted, or our own writes echoing back, which are then diffed once more); it also starts
and stops the loops as trees come and go.

A tree loop solves its tree and computes, for each quota that may need it, the write that would
bring the object in line (``core.decisions.diff``): the quotas whose results changed what they write
(a change of figures that are not written, e.g. the effective min, leaves an object that was in line
at the last pass in line), those whose objects were seen, and those whose writes were deferred or
refused; every quota on its first pass, after a topology change and when the replica becomes the
leader. It sends the non-empty writes (bounded concurrency, retried on conflicts, throttling and
server errors), except for quotas written less than one interval ago, which wait until their
interval has passed: at most one write per quota per interval, and no waiting for a quota that
has been quiet. A pass over every quota diffs and writes the quotas it would diff anyway first
(those that may need a write), then every other one. Nothing is written before the initial
listing is in memory, nor by a standby replica.

A standby replica's loops keep their trees solved: woken by the same events, they solve and diff
what may have moved out of line, and never write (nor send anything else). When the replica takes
the Lease over, a loop that stood by writes at once what it found out of line, and every loop's
next pass diffs every quota of its tree without solving it from scratch: the new leader's first
correct writes wait for neither a full solve nor a full diff.

Each pass leaves the tree's results in ``ControllerState.results`` (the per-quota gauges read
them) and is timed: the solve (when the tree was out of date), the whole pass, and the time from
the first pod event that made the tree out of date to the end of the writes that show it (a pass
that defers or fails a write leaves that clock running; one with nothing to write stops it).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from elasticquota.controller.context import LoopContext, WritingLoop
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.reconcile.writer import (
    QuotaDiff,
    Writer,
    moved_in_slices,
    pending_writes_in_slices,
)
from elasticquota.controller.solving import rebuild_off_loop, solve_tree_off_loop
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.diff import QuotaWrite, quota_write
from elasticquota.core.solve.results import QuotaResult

logger = logging.getLogger(__name__)


class TreeLoop:
    """The reconcile loop of one tree.

    Woken by events, it solves and diffs at once; a quota written less than one interval ago is
    deferred until its interval has passed (at most one write per quota per interval), and the
    loop wakes itself up when the earliest deferred or refused write is due. A pass diffs only the
    quotas that may need a write (see the module's docstring); ``reconcile_everything`` makes the
    next one diff every quota of the tree.
    """

    def __init__(
        self,
        tree_id: str,
        state: ControllerState,
        writer: Writer,
        interval: float,
        leading: asyncio.Event,
        on_pass: Callable[[], None],
        metrics: Metrics | None = None,
    ) -> None:
        self.tree_id = tree_id
        self._state = state
        self._writer = writer
        self._interval = interval
        self._leading = leading
        self._on_pass = on_pass
        self._metrics = metrics or Metrics()
        self.wake = asyncio.Event()
        self._written_at: dict[tuple[str, str], float] = {}
        self._retry_in: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        #: The next pass diffs every quota (the first one, and after anything went wrong).
        self._everything = True
        #: Quotas whose objects were seen since the last pass.
        self._objects: set[str] = set()
        #: Quotas whose write was deferred or refused at the last pass.
        self._unwritten: set[str] = set()
        #: The results of the last pass, and the engine's topology epoch then.
        self._seen: Mapping[str, QuotaResult] = {}
        self._epoch = -1
        #: Quotas whose objects a standby's pass found out of line (diffed first as the leader).
        self._out_of_line: set[str] = set()

    def note_objects(self, names: Iterable[str]) -> None:
        """These quotas' objects were seen (changed or echoed back): diff them at the next pass."""
        self._objects.update(names)

    def reconcile_everything(self) -> None:
        """Diff every quota of the tree at the next pass (e.g. when the replica starts leading)."""
        self._everything = True

    async def run(self) -> None:
        """Forever: a pass each time the loop is woken; a leader's pass while the replica leads,
        a standby's pass otherwise (``stand_by_once``: solved, never written). A standby's loop
        also makes a pass as soon as the replica leads: it writes what it found out of line."""
        while True:
            await self._woken()
            self.wake.clear()
            try:
                if self._leading.is_set():
                    await self.reconcile_once()
                else:
                    await self.stand_by_once()
            except Exception:  # a bug must not silence this tree for good: log, retry
                logger.exception("reconciling tree %r failed; retrying", self.tree_id)
                self._retry_in = self._interval
                self._everything = True  # what that pass was to diff is not known any more
            self._on_pass()
            self._schedule_retry()

    async def _woken(self) -> None:
        """Until the loop is woken, or, on a standby, until the replica leads (its takeover)."""
        if self._leading.is_set():
            await self.wake.wait()
            return
        waits = [asyncio.ensure_future(self.wake.wait())]
        waits.append(asyncio.ensure_future(self._leading.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _schedule_retry(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._retry_in is not None:
            self._timer = asyncio.get_running_loop().call_later(self._retry_in, self.wake.set)

    async def reconcile_once(self) -> bool:
        """Solve, diff, write what is due. True when nothing is left to write for now.

        The tree is solved off the event loop when out of date (and then timed; events during the
        solve leave it dirty for the next pass), and its results are kept for the metrics. The
        writer is called from here: a pod event's path to the API (docs/architecture.md). A pass
        over every quota diffs and writes the quotas noted since the last pass first (those a
        standby found out of line among them), then every other one."""
        started = time.monotonic()
        pod_event_at = self._state.pod_event_at.pop(self.tree_id, None)
        results = await self._solved()
        self._writer.stats.solves += 1
        first, everything = await self._due(results)
        stages = [first, [name for name in results if name not in first]] if everything else [first]
        written, waits = 0, []
        for names in stages:
            changes = await pending_writes_in_slices(
                self._state, results, names, diff=self._writer.diff
            )
            now = asyncio.get_running_loop().time()
            due, deferred = self._due_now(changes, now)
            outcomes = await self._writer.write_all(due)
            waits += deferred + self._note_written(due, outcomes, now)
            written += sum(outcomes)
        self._retry_in = min(waits) if waits else None
        self._metrics.reconciled(time.monotonic() - started)
        if pod_event_at is not None:
            self._settle_pod_event(pod_event_at, written, bool(waits))
        return not waits

    async def stand_by_once(self) -> None:
        """A standby's pass: the tree solved as the leader's pass would solve it, and the quotas
        that may have moved out of line diffed, never written (nor timed: the pod event clocks
        are dropped). The quotas found out of line are the first ones diffed and written after a
        takeover, ahead of every other quota (``Reconciler`` makes every loop diff every quota
        then), the tree already solved."""
        self._state.pod_event_at.pop(self.tree_id, None)
        results = await self._solved()
        changed = self._state.engine.take_moved(self.tree_id)
        moved = await moved_in_slices(changed, self._seen, results)
        names = moved | self._objects | self._unwritten | self._out_of_line
        self._objects, self._seen = set(), results
        changes = await pending_writes_in_slices(
            self._state, results, names, diff=self._writer.diff
        )
        self._out_of_line = {change.name for change in changes}
        self._retry_in = None

    async def _solved(self) -> Mapping[str, QuotaResult]:
        """The tree's results, solved off the event loop if out of date, kept for the metrics."""
        engine = self._state.engine
        await solve_tree_off_loop(engine, self.tree_id, self._metrics)
        results = self._state.results[self.tree_id] = engine.published(self.tree_id)
        return results

    async def _due(self, results: Mapping[str, QuotaResult]) -> tuple[set[str], bool]:
        """The quotas this pass diffs first, and whether it then diffs every other one, from what
        was noted since the last pass: results that changed what they write, objects seen,
        writes left over, objects a standby found out of line. Every quota on the first pass,
        after a failed one, as a new leader and after a topology change (the trees were built
        anew)."""
        engine = self._state.engine
        changed = engine.take_moved(self.tree_id)
        objects, unwritten, seen = self._objects, self._unwritten, self._seen
        out_of_line = self._out_of_line
        self._objects, self._unwritten, self._seen = set(), set(), results
        self._out_of_line = set()
        everything = self._everything or self._epoch != engine.topology_epoch
        self._everything, self._epoch = False, engine.topology_epoch
        moved = await moved_in_slices(changed, seen, results)
        return moved | objects | unwritten | out_of_line, everything

    def _due_now(
        self, changes: list[QuotaWrite], now: float
    ) -> tuple[list[QuotaWrite], list[float]]:
        """The writes to send now, and the delays of those that wait: a quota written less than
        one interval ago waits until its interval has passed (diffed again at the next pass)."""
        due, waits = [], []
        for change in changes:
            last = self._written_at.get((change.namespace, change.name))
            if last is not None and now - last < self._interval:
                waits.append(last + self._interval - now)
                self._unwritten.add(change.name)
            else:
                due.append(change)
        return due, waits

    def _note_written(
        self, sent: list[QuotaWrite], outcomes: list[bool], now: float
    ) -> list[float]:
        """Remember when each quota was written; a refused write is tried again one interval
        later (its delay returned) and diffed again at the next pass."""
        waits = []
        for change, written in zip(sent, outcomes, strict=True):
            if written:
                self._written_at[(change.namespace, change.name)] = now
            else:
                waits.append(self._interval)
                self._unwritten.add(change.name)
        return waits

    def _settle_pod_event(self, since: float, written: int, pending: bool) -> None:
        """Time the pod event once its writes are all done; keep its clock while some wait."""
        if pending:
            earliest = min(since, self._state.pod_event_at.get(self.tree_id, since))
            self._state.pod_event_at[self.tree_id] = earliest
        elif written:
            self._metrics.pod_event_written(time.monotonic() - since)


class Reconciler(WritingLoop):
    """Runs one ``TreeLoop`` per tree and wakes them when their tree may need a write: the
    dispatcher, for what is not a pod event (pod events wake their trees' loops themselves,
    through ``ControllerState.tree_wakes``, which it keeps: one entry per running loop)."""

    def __init__(self, context: LoopContext, diff: QuotaDiff = quota_write) -> None:
        super().__init__(context)
        self.writer = Writer(context.cluster, context.state, context.settings, diff=diff)
        self._loops: dict[str, TreeLoop] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        #: Passes made, by tree (for tests and debugging).
        self.passes_by_tree: collections.Counter[str] = collections.Counter()
        #: The next dispatch wakes every loop for a pass over every quota.
        self._everything = False

    async def run(self) -> None:
        await self._state.synced.wait()
        leader_watch = asyncio.create_task(self._wake_all_on_leadership())
        try:
            while True:
                await self._state.trees_changed.wait()
                self._state.trees_changed.clear()
                await rebuild_off_loop(self._state.engine)
                self._dispatch()
        finally:
            leader_watch.cancel()
            for tree_id, task in self._tasks.items():
                task.cancel()
                self._state.tree_wakes.pop(tree_id, None)

    def _dispatch(self) -> None:
        """Start loops for new trees, stop those of vanished ones, wake the loops of the trees a
        change touched (every tree when the replica has just become the leader).

        A tree is touched when it is out of date or has changed results not diffed yet (node and
        topology changes; pod changes too, though their own wake-up has already run the loop),
        or when one of its quotas' objects was seen: that catches our own writes echoing back,
        objects edited by hand and quotas created after their results were computed.
        """
        engine = self._state.engine
        trees = engine.tree_ids()
        touched = set(engine.unsettled_trees())
        for name in self._state.take_changed_quotas():
            tree_id = engine.tree_of_result(name)
            if tree_id is not None:
                self._loop(tree_id).note_objects([name])
                touched.add(tree_id)
        everything, self._everything = self._everything, False
        for tree_id in trees:
            new = tree_id not in self._loops
            loop = self._loop(tree_id)
            if everything:
                loop.reconcile_everything()
            if new or everything or tree_id in touched:
                loop.wake.set()
        for tree_id in set(self._loops) - set(trees):
            self._tasks.pop(tree_id).cancel()
            del self._loops[tree_id]
            self._state.tree_wakes.pop(tree_id, None)
            self._state.results.pop(tree_id, None)
            self._state.pod_event_at.pop(tree_id, None)

    def _loop(self, tree_id: str) -> TreeLoop:
        if tree_id not in self._loops:
            loop = TreeLoop(
                tree_id,
                self._state,
                self.writer,
                self._settings.reconcile_interval,
                self._leading,
                functools.partial(self._count_pass, tree_id),
                self._metrics,
            )
            self._loops[tree_id] = loop
            self._state.tree_wakes[tree_id] = loop.wake  # pod events wake it directly
            self._tasks[tree_id] = asyncio.create_task(loop.run(), name=f"tree {tree_id!r}")
        return self._loops[tree_id]

    @property
    def passes(self) -> int:
        """Passes made by every tree's loop."""
        return self.passes_by_tree.total()

    def _count_pass(self, tree_id: str) -> None:
        self.passes_by_tree[tree_id] += 1

    async def _wake_all_on_leadership(self) -> None:
        """A replica that becomes active checks every quota of every tree at once."""
        while True:
            await self._leading.wait()
            self._state.pod_event_at.clear()  # a standby's clocks would time its wait
            self._everything = True
            self._state.trees_changed.set()
            while self._leading.is_set():
                await asyncio.sleep(1.0)
