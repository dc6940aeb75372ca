"""Pay the kernels' compilation once, at start-up, instead of on the first real solve.

``solve_tree`` is compiled by numba on its first call (about 10 s of CPU) or loaded from the
on-disk cache (``cache=True``, well under a second). ``warm_up()`` makes that first call on a tiny
tree with exactly the array types real trees use, so the operator is fast from its first event,
and reports which of the two happened (from the dispatcher's own statistics) and how long it took:
the start-up log says whether a new replica started warm (``elasticquota.numbacache``).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np

from elasticquota.kernels import waterfill
from elasticquota.kernels.arrays import MAXV, TreeArrays


class WarmUp(NamedTuple):
    """What the warm-up of ``solve_tree``'s kernel did."""

    jitted: bool
    """False when numba's JIT is disabled (``NUMBA_DISABLE_JIT=1``): nothing was compiled."""
    loaded: int
    """Signatures of the kernel loaded from numba's on-disk cache."""
    compiled: int
    """Signatures of the kernel compiled (cache miss, or no usable cache)."""
    seconds: float
    """Wall time of the warm-up call."""


def warm_up() -> WarmUp:
    """Compile (or load from the cache) ``solve_tree`` by solving a three-quota tree."""
    kernel: Any = waterfill._solve_tree_kernel
    stats = getattr(kernel, "stats", None)  # a plain function when the JIT is disabled
    before = _counts(stats)
    start = time.perf_counter()
    waterfill.solve_tree(_tiny_tree(), True)
    seconds = time.perf_counter() - start
    after = _counts(stats)
    return WarmUp(stats is not None, after[0] - before[0], after[1] - before[1], seconds)


def _counts(stats: Any) -> tuple[int, int]:
    """(cache hits, cache misses) of a dispatcher's statistics, over all its signatures."""
    if stats is None:
        return 0, 0
    return sum(stats.cache_hits.values()), sum(stats.cache_misses.values())


def _tiny_tree() -> TreeArrays:
    """A root with three children, in the dtypes and layouts of real trees."""
    nodes, resources = 4, 2
    values = np.array([[0, 0], [4, 2**61], [3, 5], [1, 2**60]], dtype=np.int64)
    zeros = np.zeros((nodes, resources), dtype=np.int64)
    cap = np.full((nodes, resources), MAXV, dtype=np.int64)
    return TreeArrays(
        np.array([1, 3, 4, 4, 4], dtype=np.int64),
        values,
        values,
        zeros,
        zeros,
        values // 2,
        zeros,
        cap,
        values,
        np.ones((nodes, resources), dtype=np.bool_),
        np.array([5, 2**61], dtype=np.int64),
        np.ones(resources, dtype=np.bool_),
    )
