"""Benchmark of the quota-tree solver: the numba kernel against its plain-Python twin.

Generates seeded random trees that look like a large cluster's quota hierarchy (cpu in millicores,
memory and ephemeral-storage in bytes, gpu in units) and are deliberately hard for the water-fill:
the root's total barely covers the top-level mins, most quotas ask for more than their min, sizes
span two orders of magnitude and weights are not proportional to demand. At 100,000 quotas that is
about 13 borrowers per family, up to nine rounds of sharing (1.7 on average), and memory-sized
products ``weight * pool`` that overflow int64 all the time. Prints one line per tree size:

    solve quotas=N resources=4 depth=D numba_ms=M reference_ms=R ratio=X peak_mb=P

with medians over several runs; the reference is skipped (NA) where it would take too long.
"""

from __future__ import annotations

import math
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from elasticquota.kernels import reference
from elasticquota.kernels.arrays import MAXV, Int64Array, TreeArrays
from elasticquota.kernels.warmup import warm_up
from elasticquota.kernels.waterfill import solve_tree

#: (quotas, depth, numba runs, reference runs); 0 reference runs prints NA.
SIZES = ((1_000, 3, 51, 5), (10_000, 4, 21, 3), (100_000, 4, 21, 0))
SEED = 20_260_101

#: Per resource: the largest request of one leaf quota's pods.
LEAF_REQUEST_MAX = np.array([64_000, 512 * 2**30, 2 * 2**40, 8], dtype=np.float64)


def level_sizes(quotas: int, depth: int) -> list[int]:
    """Nodes per level below the root, growing geometrically, summing to ``quotas - 1``."""
    low, high = 1.0, float(quotas)
    for _ in range(100):
        fanout = (low + high) / 2
        if sum(round(fanout**level) for level in range(1, depth + 1)) > quotas - 1:
            high = fanout
        else:
            low = fanout
    sizes = [max(1, round(low**level)) for level in range(1, depth)]
    return [*sizes, quotas - 1 - sum(sizes)]


def random_child_start(rng: np.random.Generator, quotas: int, depth: int) -> Int64Array:
    """BFS child ranges: each level's nodes spread randomly over the previous level's."""
    counts = np.zeros(quotas, dtype=np.int64)
    counts[0] = (sizes := level_sizes(quotas, depth))[0]
    parent_first, parent_count = 1, sizes[0]
    for size in sizes[1:]:
        parents = rng.integers(0, parent_count, size=size)
        counts[parent_first : parent_first + parent_count] = np.bincount(
            parents, minlength=parent_count
        )
        parent_first, parent_count = parent_first + parent_count, size
    child_start = np.empty(quotas + 1, dtype=np.int64)
    child_start[0] = 1
    child_start[1:] = 1 + np.cumsum(counts)
    return child_start


def _scaled(values: np.ndarray[Any, Any], low: float, high: float, rng: np.random.Generator) -> Any:
    factors = rng.uniform(low, high, size=values.shape)
    return np.minimum(values * factors, float(MAXV)).astype(np.int64)


def random_tree(rng: np.random.Generator, quotas: int, depth: int) -> TreeArrays:
    """A demanding tree: most quotas borrow, the root barely covers the top-level mins."""
    child_start = random_child_start(rng, quotas, depth)
    shape = (quotas, 4)
    is_leaf = (child_start[1:] == child_start[:-1])[:, None]
    sizes = 2.0 ** -rng.uniform(0.0, 8.0, size=shape)  # leaf quotas over two orders of magnitude
    request = np.where(is_leaf, sizes * LEAF_REQUEST_MAX, 0.0)
    request[:, 3] = np.where(rng.random(quotas) < 0.6, 0.0, np.round(request[:, 3]))
    request = request.astype(np.int64)
    spec_min = _subtree_mins(child_start, _scaled(request, 0.3, 1.1, rng), rng)
    cap = _scaled(spec_min, 1.5, 3.0, rng)
    cap[rng.random(shape) < 0.1] = MAXV
    # half the quotas share by their max (the default), half by a weight of their own
    default_weight = np.where(cap == MAXV, spec_min, cap)
    weight = np.where(rng.random(shape) < 0.5, default_weight, 1 + spec_min // 8)
    floor = np.where(rng.random(shape) < 0.1, spec_min, 0)
    for array in (request, spec_min, floor, weight):
        array[0] = 0
    cap[0] = MAXV
    top_level = slice(child_start[0], child_start[1])
    total = _scaled(spec_min[top_level].sum(axis=0, dtype=np.float64), 1.05, 1.05, rng)
    return TreeArrays(
        child_start=child_start,
        self_request=request,
        self_used=(request * 0.8).astype(np.int64),
        self_np_request=request // 4,
        self_np_used=request // 5,
        spec_min=spec_min,
        request_floor=floor,
        cap=cap,
        weight=weight,
        distributes=np.ones(shape, dtype=np.bool_),
        total=total,
        total_present=np.ones(4, dtype=np.bool_),
    )


def _subtree_mins(
    child_start: Int64Array, leaf_mins: Int64Array, rng: np.random.Generator
) -> Int64Array:
    """A parent's min is about the sum of its children's mins (leaves keep theirs)."""
    mins = leaf_mins.astype(np.float64)
    for node in range(len(mins) - 1, -1, -1):
        first, last = child_start[node], child_start[node + 1]
        if last > first:
            mins[node] = mins[first:last].sum(axis=0) * rng.uniform(0.9, 1.1)
    return np.minimum(mins, float(MAXV)).astype(np.int64)


def median_ms(solver: Callable[..., Any], tree: TreeArrays, runs: int) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        solver(tree, True)
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def three_digits(value: float) -> str:
    """About three significant digits, never in exponent notation."""
    decimals = max(0, 2 - math.floor(math.log10(value))) if value > 0 else 0
    return f"{value:.{decimals}f}"


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    warm_up()
    rng = np.random.default_rng(SEED)
    print("# quota-tree solver: median wall time of one solve_tree call (scale_min on)")
    for quotas, depth, numba_runs, reference_runs in SIZES:
        tree = random_tree(rng, quotas, depth)
        numba_ms = median_ms(solve_tree, tree, numba_runs)
        if reference_runs:
            reference_ms = median_ms(reference.solve_tree, tree, reference_runs)
            ratio = reference_ms / numba_ms
            compared = f"reference_ms={three_digits(reference_ms)} ratio={three_digits(ratio)}"
        else:
            compared = "reference_ms=NA ratio=NA"
        print(
            f"solve quotas={quotas} resources=4 depth={depth} numba_ms={three_digits(numba_ms)} "
            f"{compared} peak_mb={peak_mb():.1f}"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
