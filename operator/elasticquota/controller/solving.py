"""Solves off the event loop: the kernel and the results of a dirty tree in a worker thread.

The loops that need solved trees (the tree loops, revocation, gating; the demo's node simulator,
plugged in by the development tooling) call these instead of the engine's synchronous ``solve``:
``QuotaEngine.prepare_solve`` copies the tree's inputs on the loop, ``core.solve.solvejob.compute``
runs in a thread (a whole 10,000-quota tree takes hundreds of milliseconds when every row moved; the
thread gives the interpreter back every few milliseconds, so event intake, the webhooks and the
Lease go on meanwhile) and ``QuotaEngine.finish_solve`` publishes on the loop. Pod events that
arrive during the computation leave the tree dirty for the next solve. A topology rebuild (a quota
added, moved or deleted: half a second at 10,000 quotas and 100,000 pods) runs the same way
(``core.solve.rebuild``), one at a time per engine, before the solves that need it; the reconciler
runs it before it looks at the trees.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from elasticquota.controller.metrics import Metrics
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.rebuild import compute_rebuild
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.solve.solvejob import compute

#: One rebuild at a time per engine: a second caller waits for it instead of starting its own
#: (which would overtake, and so drop, the first).
_REBUILDING: weakref.WeakKeyDictionary[QuotaEngine, asyncio.Lock] = weakref.WeakKeyDictionary()

#: Rebuilds in a row before giving up on catching a stream of quota changes (the synchronous
#: rebuild of the next reader then catches up).
MAX_REBUILDS = 3


async def rebuild_off_loop(engine: QuotaEngine) -> None:
    """Bring the topology up to date in a worker thread, if a quota change made it stale."""
    lock = _REBUILDING.setdefault(engine, asyncio.Lock())
    async with lock:
        for _ in range(MAX_REBUILDS):
            job = engine.prepare_rebuild()
            if job is None:
                return
            outcome = await asyncio.to_thread(compute_rebuild, job)
            engine.finish_rebuild(job, outcome)


async def solve_tree_off_loop(
    engine: QuotaEngine, tree_id: str, metrics: Metrics | None = None
) -> bool:
    """Solve the tree in a worker thread if it is dirty; True when new results were published.

    Whoever asks for the solve (a tree loop, revocation, gating), ``metrics`` times it from the
    rebuild it waits for to the publication of its results (``elastic_quota_solve_seconds``).
    """
    started = time.monotonic()
    await rebuild_off_loop(engine)
    job = engine.prepare_solve(tree_id)
    if job is None:
        return False
    outcome = await asyncio.to_thread(compute, job, engine.solver)
    published = engine.finish_solve(job, outcome)
    if metrics is not None:
        metrics.solved(tree_id, time.monotonic() - started)
    return published


#: Rounds of rebuild-and-solve before ``solved_snapshot`` gives up on a stream of quota changes
#: (then ``QuotaEngine.latest`` catches up on the loop).
MAX_SNAPSHOT_ROUNDS = 3


async def solved_snapshot(engine: QuotaEngine, metrics: Metrics | None = None) -> Snapshot:
    """Every dirty tree solved off the loop, then the published state (``QuotaEngine.latest``).

    A quota change that arrives while a tree is solved makes the topology stale again, and
    ``latest`` would then rebuild and solve every tree on the loop: another round goes first."""
    for _ in range(MAX_SNAPSHOT_ROUNDS):
        await rebuild_off_loop(engine)
        for tree_id in engine.tree_ids():
            await solve_tree_off_loop(engine, tree_id, metrics)
        if not engine.topology_stale:
            break
    return engine.latest()


async def published_snapshot(engine: QuotaEngine, metrics: Metrics | None = None) -> Snapshot:
    """The state as of each tree's last solve (``QuotaEngine.latest``), with the topology brought
    up to date off the loop first when a quota change made it stale."""
    if engine.topology_stale:
        return await solved_snapshot(engine, metrics)
    return engine.latest()
