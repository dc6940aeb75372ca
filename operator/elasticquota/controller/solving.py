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

The operator gives them one thread of their own (``use_one_solver_thread``): the interpreter lets
one thread run Python at a time, so two solves at once finish no sooner than one after the other,
and each thread that runs Python besides the loop's is one more that the loop waits for (a scale
benchmark's stall caught a rebuild and two solves running at once). Without it (the tests) they
run in the loop's default executor.

It also shortens the interpreter's switch interval (``SWITCH_INTERVAL``). The loop's thread lets
go of the interpreter at every socket call, and while a worker runs Python it gets it back only
when the worker is made to yield, after the interval: with CPython's 5 ms and a few dozen socket
calls per turn of the loop (watch streams, writes, webhooks), one turn took hundreds of
milliseconds while the loop's thread itself ran almost nothing (the stall watchdog's reports at
100,000 pods). A thread running Python next to 30 echoing sockets delayed a 10 ms timer by 269 ms
(median) with 5 ms, 31 ms with 1 ms and 10 ms with 0.5 ms; a solve next to a busy loop took no
longer with 0.5 ms (28 ms against 36 ms, median of some 270).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TypeVar

from elasticquota.controller.metrics import Metrics
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.rebuild import compute_rebuild
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.solve.solvejob import compute

#: One rebuild at a time per engine: a second caller waits for it instead of starting its own
#: (which would overtake, and so drop, the first).
_REBUILDING: weakref.WeakKeyDictionary[QuotaEngine, asyncio.Lock] = weakref.WeakKeyDictionary()

#: Each event loop's solver thread, where ``use_one_solver_thread`` gave it one.
_SOLVER_THREADS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Executor] = (
    weakref.WeakKeyDictionary()
)

Result = TypeVar("Result")

#: Seconds a thread runs Python before it yields the interpreter to one waiting for it.
SWITCH_INTERVAL = 0.0005


def use_one_solver_thread(switch_interval: float = SWITCH_INTERVAL) -> ThreadPoolExecutor:
    """From now on, the running loop's solves and rebuilds run one at a time in one thread of
    their own (named ``solver``), and the interpreter switches threads every ``switch_interval``
    seconds (process-wide); shut the executor down when the loop is done with it."""
    sys.setswitchinterval(switch_interval)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="solver")
    _SOLVER_THREADS[asyncio.get_running_loop()] = executor
    return executor


async def _off_loop(function: Callable[..., Result], *arguments: object) -> Result:
    """``function(*arguments)`` in the loop's solver thread (or its default executor)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, function, *arguments)
    return await loop.run_in_executor(_SOLVER_THREADS.get(loop), call)


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
            outcome = await _off_loop(compute_rebuild, job)
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
    outcome = await _off_loop(compute, job, engine.solver)
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
