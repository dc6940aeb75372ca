"""Keep the garbage collector's full collections off the event loop's budget.

CPython's cyclic collector visits every tracked object in a full (generation 2) collection. Right
after start-up that is some 370,000 objects (numba, the API client's models, Kopf), plus the
memory of the cluster once it is listed: a full collection then holds the event loop for about
half a second, several times during a burst of pod events. Those objects live as long as the
process, so scanning them again finds nothing. ``freeze`` moves every object tracked so far into
the collector's permanent generation (``gc.freeze``: O(1), objects are still freed by reference
counting when they go), so later collections visit only what was made since. It is called once
after the imports and the kernel's warm-up, and again once the initial listing is in memory.

A burst adds tens of thousands of pods and results that are not frozen: in a replay of a
50,000-pod burst the collector made 17 full collections of up to 132-171 ms each.
``refreeze_after_collections`` (from start-up on: the initial listing's full collections scanned
the growing cluster too, half a second each at 100,000 pods) freezes what survives each collection
of the two older generations (all of it was reachable a moment ago): objects that would have been
promoted to the oldest generation go to the permanent one instead, so a full collection finds
next to nothing to scan. Freezing the survivors of full collections only brought the longest one
of that replay to 32 ms, but at the cluster-scale benchmark's burst a full collection still came
every few thousand pods and scanned all of them (0.5 s on a busy machine). A collection of 50 ms
or more is logged with the thread it ran in (the collector holds the GIL: one in a solve's
worker thread stalls the event loop's thread as well).
The price: an object frozen while alive that later dies in a reference cycle is not collected.
To bound that, ``thaw`` unfreezes everything and makes one full collection (the survivors are
frozen again), at a quiet moment. A thaw is a pause that grows with the heap (1.2-1.6 s at 100,000
pods on a busy 2-core machine: far beyond the loop's budget), so it must come only when cycles may
have been lost, not when the cluster grew: the heap (the interpreter's memory blocks in use) is
compared with what the cluster in memory (pods, quotas, nodes, profiles) accounts for. A minute
after the initial listing (its results built, its first writes kept) and after each thaw, the
heap and the cluster's size are noted; a thaw is due once the heap is a quarter more than that
scaled by how much the cluster grew since (never scaled down: a cluster that shrinks frees its
objects by reference counting). A 50,000-pod burst at 100,000 pods adds half the pods: no thaw,
where counting the frozen objects alone made one right after the burst (and, at 10,000 pods,
one after the start's first writes). Leaked cycles still bring one: a quarter of the heap's
tracked objects at most, CPython's own rule for full collections. The engine's own memory makes
no cycles (a replay of the burst left none to collect), and a thaw after a 50,000-pod burst found
3,905 unreachable objects among 619,511.

The C heap is kept small too: the solves and the ``/metrics`` encoding run in worker threads, and
glibc gives every thread that allocates an arena of its own (up to eight per core), each keeping
the memory freed in it for later. ``limit_malloc_arenas`` caps them at two, as
``MALLOC_ARENA_MAX=2`` would (Python's small objects do not use them; arrays and big buffers do).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)


def freeze(moment: str, collect: bool = False) -> int:
    """Freeze everything tracked so far (after a full collection when ``collect``); return how
    many objects are now frozen."""
    if collect:
        gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.info("garbage collector: %d objects frozen %s", frozen, moment)
    return frozen


#: A thaw (a full collection of everything, frozen objects included) is due once the frozen
#: objects are this fraction more than right after the last one, scaled by the cluster's growth.
THAW_GROWTH = 0.25
#: Seconds between two looks at the frozen count.
THAW_CHECK_EVERY = 60.0
#: A due thaw waits until nothing happened for this long (measured from the ``last_activity``
#: it is given)...
QUIET_FOR = 5.0
#: ...but at most this many seconds.
QUIET_PATIENCE = 600.0


#: A collection that takes this long is logged with its thread: the collector holds the GIL
#: throughout, so one in a worker thread stalls the event loop's thread all the same.
SLOW_COLLECTION = 0.05


class Refreezer:
    """The collector's callback: freeze what survived a collection of generation 1 or 2 (all of
    it was reachable), and log a collection that took ``slow_after`` seconds or more."""

    def __init__(self, slow_after: float = SLOW_COLLECTION) -> None:
        self.slow_after = slow_after
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info.get("generation", 0)
        if generation >= 1:
            gc.freeze()
        took = time.perf_counter() - self._started
        if took >= self.slow_after:
            logger.info(
                "garbage collection of generation %d took %.3f s in thread %s (%d unreachable)",
                generation,
                took,
                threading.current_thread().name,
                info.get("collected", 0),
            )


def refreeze_after_collections(slow_after: float = SLOW_COLLECTION) -> Refreezer:
    """From now on, freeze the survivors of every collection of generation 1 or 2, and log the
    slow collections (idempotent: the callback already installed is returned)."""
    for callback in gc.callbacks:
        if isinstance(callback, Refreezer):
            return callback
    refreezer = Refreezer(slow_after)
    gc.callbacks.append(refreezer)
    return refreezer


def thaw() -> int:
    """Unfreeze everything and collect it all once (the callback freezes the survivors again);
    how many unreachable objects were found."""
    gc.unfreeze()
    return gc.collect()


@dataclass(slots=True)
class ThawRule:
    """When a thaw is due: the heap (``sys.getallocatedblocks``: the interpreter's memory blocks in
    use, objects frozen or not) grew by ``growth`` beyond what the cluster's growth since the last
    look (``note``) explains."""

    growth: float = THAW_GROWTH
    heap: int = 0
    population: int = 0

    def note(self, heap: int, population: int) -> None:
        """The heap just after a thaw (or once the start-up's first results are built)."""
        self.heap, self.population = heap, max(population, 1)

    def due(self, heap: int, population: int) -> bool:
        scale = max(1.0, population / self.population)
        return heap > self.heap * scale * (1 + self.growth)


async def thaw_when_grown(
    last_activity: Callable[[], float],
    population: Callable[[], int],
    heap_size: Callable[[], int] = sys.getallocatedblocks,
    rule: ThawRule | None = None,
    check_every: float = THAW_CHECK_EVERY,
    quiet_for: float = QUIET_FOR,
    patience: float = QUIET_PATIENCE,
    clock: Callable[[], float] = time.monotonic,
    collect: Callable[[], int] = thaw,
) -> None:
    """For ever: every ``check_every`` seconds, when the ``rule`` says a thaw is due (the heap,
    ``heap_size()``, against the cluster's size, ``population()``), wait until
    ``last_activity()`` (monotonic) is ``quiet_for`` seconds old (at most ``patience`` seconds),
    then ``collect`` (``thaw``: the number of unreachable objects found).

    The first look only notes the heap: by then the trees' results and the objects the first
    writes returned are in memory (at 10,000 quotas they grew the heap by a quarter after the
    listing, with no pod more). ``sys.getallocatedblocks`` costs half a millisecond where
    ``gc.get_freeze_count`` walks every frozen object (50 ms on the loop at 100,000 pods)."""
    rule = rule or ThawRule()
    await asyncio.sleep(check_every)
    rule.note(heap_size(), population())
    while True:
        await asyncio.sleep(check_every)
        if not rule.due(heap_size(), population()):
            continue
        deadline = clock() + patience
        while clock() - last_activity() < quiet_for and clock() < deadline:
            await asyncio.sleep(quiet_for)
        started = clock()
        found = collect()
        rule.note(heap_size(), population())
        logger.info(
            "garbage collector: full collection of everything in %.2f s, %d unreachable "
            "objects, %d memory blocks in use",
            clock() - started,
            found,
            rule.heap,
        )


#: glibc's ``mallopt`` parameter for the number of arenas (malloc.h).
M_ARENA_MAX = -8


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas (before threads start); False where the C library is not glibc
    or refuses."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
