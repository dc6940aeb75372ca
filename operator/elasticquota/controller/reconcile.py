"""Level-based control: one loop per quota tree solves, diffs and writes; writes only on change.

Events only update memory and set ``trees_changed``. The dispatcher wakes the loop of every dirty
tree (and every tree when something else may have moved, e.g. our own writes echoing back or a new
leader). A tree loop solves its tree, computes for each quota the write that would bring the object
in line (``core.diff``), sends the non-empty ones (bounded concurrency, retried on conflicts,
throttling and server errors), and then sleeps one interval: at most one write per quota per
interval. Nothing is written before the initial listing is in memory, nor by a standby replica.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubernetes_asyncio import client

from elasticquota.controller.state import ControllerState
from elasticquota.core.diff import QuotaWrite, quota_write
from elasticquota.core.results import QuotaResult
from elasticquota.kube.errors import describe
from elasticquota.kube.quotas import patch_quota, patch_quota_status
from elasticquota.settings import Settings

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class WriteStats:
    """Counters for logs and benchmarks."""

    writes: int = 0
    failures: int = 0
    solves: int = 0


class Writer:
    """Sends quota writes: one merge patch for annotations, one for ``status.used``."""

    def __init__(self, api: client.ApiClient, state: ControllerState, settings: Settings) -> None:
        self._api = api
        self._state = state
        self._settings = settings
        self._slots = asyncio.Semaphore(settings.write_concurrency)
        self.stats = WriteStats()

    async def write(self, change: QuotaWrite) -> bool:
        """Apply one quota's changes; False when the API refused them (retried next pass)."""
        if self._settings.dry_run:
            logger.info("dry-run: would write %s/%s: %s", change.namespace, change.name, change)
            return True
        async with self._slots:
            try:
                await self._send(change)
            except Exception as error:  # the API refused: count it, try again next round
                self.stats.failures += 1
                logger.warning(
                    "writing %s/%s failed: %s", change.namespace, change.name, describe(error)
                )
                return False
        self.stats.writes += 1
        return True

    async def _send(self, change: QuotaWrite) -> None:
        key = (change.namespace, change.name)
        if change.annotations:
            body = await patch_quota(
                self._api,
                change.namespace,
                change.name,
                {"metadata": {"annotations": change.annotations}},
            )
            self._state.on_quota(body)
        if change.used is not None:
            body = await patch_quota_status(
                self._api, change.namespace, change.name, {"used": change.used}
            )
            self._state.on_quota(body)
        logger.debug("wrote %s", key)


def pending_writes(state: ControllerState, results: Mapping[str, QuotaResult]) -> list[QuotaWrite]:
    """The writes one tree needs: only quotas that exist as objects and differ from their result."""
    writes = []
    for result in results.values():
        current = state.quotas.get((result.namespace, result.name))
        if current is None:
            continue
        change = quota_write(result, current.annotations, current.status)
        if not change.empty:
            writes.append(change)
    return writes


class TreeLoop:
    """The reconcile loop of one tree."""

    def __init__(
        self,
        tree_id: str,
        state: ControllerState,
        writer: Writer,
        interval: float,
        leading: asyncio.Event,
        on_pass: Callable[[], None],
    ) -> None:
        self.tree_id = tree_id
        self._state = state
        self._writer = writer
        self._interval = interval
        self._leading = leading
        self._on_pass = on_pass
        self.wake = asyncio.Event()

    async def run(self) -> None:
        while True:
            await self.wake.wait()
            await self._leading.wait()
            self.wake.clear()
            complete = await self.reconcile_once()
            self._on_pass()
            if not complete:
                self.wake.set()  # retry the refused writes after the interval
            await asyncio.sleep(self._interval)

    async def reconcile_once(self) -> bool:
        """Solve, diff, write. True when every needed write succeeded."""
        results = self._state.engine.solve_tree(self.tree_id)
        self._writer.stats.solves += 1
        writes = pending_writes(self._state, results)
        if not writes:
            return True
        outcomes = await asyncio.gather(*(self._writer.write(change) for change in writes))
        return all(outcomes)


class Reconciler:
    """Runs one ``TreeLoop`` per tree and wakes them when their tree may need a write."""

    def __init__(
        self,
        state: ControllerState,
        api: client.ApiClient,
        settings: Settings,
        leading: asyncio.Event,
    ) -> None:
        self._state = state
        self._settings = settings
        self._leading = leading
        self.writer = Writer(api, state, settings)
        self._loops: dict[str, TreeLoop] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.passes = 0

    async def run(self) -> None:
        await self._state.synced.wait()
        leader_watch = asyncio.create_task(self._wake_all_on_leadership())
        try:
            while True:
                await self._state.trees_changed.wait()
                self._state.trees_changed.clear()
                self._dispatch()
        finally:
            leader_watch.cancel()
            for task in self._tasks.values():
                task.cancel()

    def _dispatch(self) -> None:
        """Start loops for new trees, stop those of vanished ones, wake every tree's loop.

        Waking a clean tree costs a diff and no write; it is what catches our own writes echoing
        back, objects edited by hand and quotas created after their results were computed.
        """
        trees = self._state.engine.tree_ids()
        for tree_id in trees:
            self._loop(tree_id).wake.set()
        for tree_id in set(self._loops) - set(trees):
            self._tasks.pop(tree_id).cancel()
            del self._loops[tree_id]

    def _loop(self, tree_id: str) -> TreeLoop:
        if tree_id not in self._loops:
            loop = TreeLoop(
                tree_id,
                self._state,
                self.writer,
                self._settings.reconcile_interval,
                self._leading,
                self._count_pass,
            )
            self._loops[tree_id] = loop
            self._tasks[tree_id] = asyncio.create_task(loop.run(), name=f"tree {tree_id!r}")
        return self._loops[tree_id]

    def _count_pass(self) -> None:
        self.passes += 1

    async def _wake_all_on_leadership(self) -> None:
        """A replica that becomes active checks every tree at once."""
        while True:
            await self._leading.wait()
            self._state.trees_changed.set()
            while self._leading.is_set():
                await asyncio.sleep(1.0)
