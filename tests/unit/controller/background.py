"""Loops run in the background for the body of a block, for the controller tests.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.reconciler import Reconciler
from elasticquota.controller.reconcile.writer import QuotaDiff
from elasticquota.core.decisions.diff import quota_write


@contextlib.asynccontextmanager
async def running(coro: Coroutine[Any, Any, None]) -> AsyncIterator[asyncio.Task[None]]:
    """Run a loop in the background for the body of the block, then stop it."""
    task = asyncio.create_task(coro)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # the loop's own tasks see their cancellation


@contextlib.asynccontextmanager
async def reconciling(
    context: LoopContext, synced: bool = True, diff: QuotaDiff = quota_write
) -> AsyncIterator[Reconciler]:
    """A reconciler running for the body of the block (on a synced memory unless told not),
    diffing each result with ``diff``."""
    if synced:
        context.state.mark_synced()
    reconciler = Reconciler(context, diff)
    async with running(reconciler.run()):
        yield reconciler
