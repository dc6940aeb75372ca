"""Solves off the event loop: the kernel and the results of a dirty tree in a worker thread.

The loops that need solved trees (the tree loops, revocation, gating, the node simulator) call these
instead of the engine's synchronous ``solve``: ``QuotaEngine.prepare_solve`` copies the tree's
inputs on the loop, ``core.solvejob.compute`` runs in a thread (a whole 10,000-quota tree takes
hundreds of milliseconds when every row moved; the thread gives the interpreter back every few
milliseconds, so event intake, the webhooks and the Lease go on meanwhile) and
``QuotaEngine.finish_solve`` publishes on the loop. Pod events that arrive during the computation
leave the tree dirty for the next solve. A topology rebuild (a quota added or moved) still runs on
the loop.
"""

from __future__ import annotations

import asyncio

from elasticquota.core.engine import QuotaEngine
from elasticquota.core.results import Snapshot
from elasticquota.core.solvejob import compute


async def solve_tree_off_loop(engine: QuotaEngine, tree_id: str) -> bool:
    """Solve the tree in a worker thread if it is dirty; True when new results were published."""
    job = engine.prepare_solve(tree_id)
    if job is None:
        return False
    outcome = await asyncio.to_thread(compute, job, engine.solver)
    return engine.finish_solve(job, outcome)


async def solved_snapshot(engine: QuotaEngine) -> Snapshot:
    """Every dirty tree solved off the loop, then the published state (``QuotaEngine.latest``)."""
    for tree_id in engine.tree_ids():
        await solve_tree_off_loop(engine, tree_id)
    return engine.latest()
