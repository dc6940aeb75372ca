"""Largest-remainder split of a pool among siblings by weight: Koordinator's rounding, exactly.

``floor(w * pool / W)`` for each member (exact even when ``w * pool`` or ``W`` exceed int64, through
``int128``), then the leftover units one each to the largest remainders, ties broken by the lower
index (siblings are sorted by name). Leftovers are handed out with a histogram of the remainders'
top bits and a quickselect instead of a full sort. Work arrays are allocated once per solve and
passed in.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from elasticquota.kernels.arrays import Int64Array
from elasticquota.kernels.int128 import division_ratio, mul_divmod

#: Rows of the per-solve work array (allocated once, as wide as the widest family of siblings):
#: the borrowers (row indices), their shares of a round and its remainders (hi, lo), an ordering
#: of the members, and a histogram of remainders. One 2-d array rather than a tuple of arrays:
#: every array handed to a helper costs reference-count updates.
MEMBER, SHARE, _REM_HI, _REM_LO, _ORDER, _COUNT, _WORK_ROWS = 0, 1, 2, 3, 4, 5, 6
_MAX_BUCKET_BITS = 10


@numba.njit(cache=True, error_model="numpy")
def new_work(siblings: int) -> Int64Array:
    return np.zeros((_WORK_ROWS, max(siblings, 1 << _MAX_BUCKET_BITS)), dtype=np.int64)


# -- largest-remainder split ------------------------------------------------------------------


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _ranks_before(a: int, b: int, work: Int64Array) -> bool:
    """Whether member ``a`` gets a leftover unit before ``b``: larger remainder, then index.

    Written with ``&`` and ``|`` rather than ``and``/``or``: without branches the comparison costs
    the same on random remainders as on sorted ones.
    """
    a_hi, b_hi = work[_REM_HI, a], work[_REM_HI, b]
    a_lo, b_lo = work[_REM_LO, a], work[_REM_LO, b]
    lower_first = (a_lo > b_lo) | ((a_lo == b_lo) & (a < b))
    return bool((a_hi > b_hi) | ((a_hi == b_hi) & lower_first))


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _swap_order(work: Int64Array, i: int, j: int) -> None:
    work[_ORDER, i], work[_ORDER, j] = work[_ORDER, j], work[_ORDER, i]


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _partition(work: Int64Array, low: int, high: int) -> int:
    """Partition ``order[low:high+1]`` around its median of three; return the pivot's position.

    Branch-free Lomuto: every element is swapped to the boundary, which only advances past the
    members ranked before the pivot (the others are merely permuted among themselves).
    """
    order = work[_ORDER]
    middle = (low + high) >> 1
    if _ranks_before(order[middle], order[low], work):
        _swap_order(work, low, middle)
    if _ranks_before(order[high], order[low], work):
        _swap_order(work, low, high)
    if _ranks_before(order[middle], order[high], work):
        _swap_order(work, middle, high)
    pivot = order[high]
    store = low
    for position in range(low, high):
        member = order[position]
        order[position] = order[store]
        order[store] = member
        store += _ranks_before(member, pivot, work)
    _swap_order(work, store, high)
    return store


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _select_first(work: Int64Array, count: int, wanted: int) -> None:
    """Reorder ``order[:count]`` so that ``order[:wanted]`` are the members ranked first."""
    low = 0
    high = count - 1
    while low < high:
        store = _partition(work, low, high)
        if store == wanted:
            return
        if store < wanted:
            low = store + 1
        else:
            high = store - 1


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _give_to_first(work: Int64Array, count: int, wanted: int) -> None:
    """One unit each to the ``wanted`` members ranked first among ``order[:count]``."""
    _select_first(work, count, wanted)
    for t in range(wanted):
        work[SHARE, work[_ORDER, t]] += 1


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _bucket_layout(count: int, weight_lo: int) -> tuple[int, int]:
    """``(bits, shift)``: remainders below ``weight_lo`` fall into ``rem >> shift < 2**bits``.

    About one bucket per member, so that the bucket holding the cut-off is small.
    """
    bits = 1
    while (1 << bits) < count and bits < _MAX_BUCKET_BITS:
        bits += 1
    exponent = math.frexp(float(weight_lo))[1]  # weight_lo <= 2**exponent
    return bits, max(0, exponent - bits)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _give_by_buckets(work: Int64Array, positive: int, leftover: int, weight_lo: int) -> None:
    """The leftover units to the largest remainders, all below ``weight_lo`` (< 2**62).

    A histogram of the remainders' top bits finds the bucket where the cut-off falls: the members
    above it get a unit outright, and only that bucket's members are ranked exactly. Linear time;
    the passes over the members have no data-dependent branches.
    """
    order, remainder, share, counts = work[_ORDER], work[_REM_LO], work[SHARE], work[_COUNT]
    bits, shift = _bucket_layout(positive, weight_lo)
    for t in range(positive):
        counts[remainder[order[t]] >> shift] += 1
    boundary = (1 << bits) - 1
    above = 0
    while above + counts[boundary] < leftover:
        above += counts[boundary]
        boundary -= 1
    candidates = 0
    for t in range(positive):
        j = order[t]
        bucket = remainder[j] >> shift
        counts[bucket] = 0
        share[j] += bucket > boundary
        order[candidates] = j
        candidates += bucket == boundary
    _give_to_first(work, candidates, leftover - above)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _floor_shares(
    pool: int,
    count: int,
    weight_hi: int,
    weight_lo: int,
    weight: Int64Array,
    r: int,
    work: Int64Array,
) -> tuple[int, int]:
    """``share[j] = floor(w_j * pool / W)`` with its remainder; ``order`` lists positive weights.

    Returns how many members have a positive weight and the sum of the floors.
    """
    ratio = division_ratio(pool, weight_hi, weight_lo)
    positive = 0
    distributed = 0
    for j in range(count):
        w = weight[work[MEMBER, j], r]
        work[SHARE, j] = 0
        if w == 0:
            continue
        quotient, work[_REM_HI, j], work[_REM_LO, j] = mul_divmod(
            w, pool, weight_hi, weight_lo, ratio
        )
        work[SHARE, j] = quotient
        work[_ORDER, positive] = j
        positive += 1
        distributed += quotient
    return positive, distributed


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def split_pool(
    pool: int,
    count: int,
    weight_hi: int,
    weight_lo: int,
    weight: Int64Array,
    r: int,
    work: Int64Array,
) -> None:
    """Share ``pool`` among the first ``count`` members by weight (summing to ``W > 0``) exactly.

    Floors first, then the leftover units one each to the largest remainders (ties: lower index).
    """
    positive, distributed = _floor_shares(pool, count, weight_hi, weight_lo, weight, r, work)
    leftover = min(pool - distributed, positive)
    if leftover <= 0:
        return
    if weight_hi == 0:
        _give_by_buckets(work, positive, leftover, weight_lo)
    else:
        _give_to_first(work, positive, leftover)
