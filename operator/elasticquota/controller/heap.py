"""Keep the garbage collector's full collections off the event loop's budget.

CPython's cyclic collector visits every tracked object in a full (generation 2) collection. Right
after start-up that is some 370,000 objects (numba, the API client's models, Kopf), plus the
memory of the cluster once it is listed: a full collection then holds the event loop for about
half a second, several times during a burst of pod events. Those objects live as long as the
process, so scanning them again finds nothing. ``freeze`` moves every object tracked so far into
the collector's permanent generation (``gc.freeze``: O(1), objects are still freed by reference
counting when they go), so later collections visit only what was made since. It is called once
after the imports and the kernel's warm-up, and again once the initial listing is in memory.

The C heap is kept small too: the solves and the ``/metrics`` encoding run in worker threads, and
glibc gives every thread that allocates an arena of its own (up to eight per core), each keeping
the memory freed in it for later. ``limit_malloc_arenas`` caps them at two, as
``MALLOC_ARENA_MAX=2`` would (Python's small objects do not use them; arrays and big buffers do).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

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
