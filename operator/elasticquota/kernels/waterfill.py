"""The quota-tree solver as numba kernels: request sums bottom-up, runtime water-fill top-down.

This is the hot path of the operator: every dirty tree is solved from scratch in one call of
``solve_tree``. The algorithm (Koordinator's runtime quota calculator with largest-remainder
rounding) is specified by ``reference.py``, its plain-Python twin, which the tests hold this module
to exactly. Everything stays in signed int64: products and sums that may not fit go through the
wide helpers of ``int128``.

Public entry points: ``solve_tree`` (the whole tree), ``water_fill`` (one level, one resource) and
``largest_remainder_split`` (one round of sharing, implemented in ``shares``). The kernels they
call release the GIL (``nogil``): a solve runs in a worker thread, and the event loop's thread must
not wait for it to get the interpreter back.
"""

from __future__ import annotations

import numba
import numpy as np

from elasticquota.kernels.arrays import (
    MAXV,
    BoolArray,
    Int64Array,
    SolveResult,
    TreeArrays,
    checked_tree,
)
from elasticquota.kernels.int128 import division_ratio, mul_divmod, wide_add, wide_less
from elasticquota.kernels.shares import MEMBER, SHARE, new_work, split_pool

#: How a family's mins are scaled: (scale?, sum of the mins as hi, lo, division ratio).
MinScaling = tuple[bool, int, int, float]

# -- one level --------------------------------------------------------------------------------


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _min_scaling(
    total: int,
    total_present: bool,
    scale_min: bool,
    first: int,
    last: int,
    r: int,
    mins: Int64Array,
) -> MinScaling:
    """Whether the children's mins must be scaled down to fit ``total`` (and how)."""
    sum_hi = 0
    sum_lo = 0
    for c in range(first, last):
        sum_hi, sum_lo = wide_add(sum_hi, sum_lo, mins[c, r])
    scale = scale_min and total_present and wide_less(0, total, sum_hi, sum_lo)
    ratio = division_ratio(total, sum_hi, sum_lo) if scale else -1.0
    return scale, sum_hi, sum_lo, ratio


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _effective_min(minimum: int, total: int, scaling: MinScaling) -> int:
    """The min itself, or ``floor(total * min / sum(mins))`` when scaling."""
    scale, sum_hi, sum_lo, ratio = scaling
    if not scale:
        return minimum
    if total <= 0:
        return 0
    return mul_divmod(minimum, total, sum_hi, sum_lo, ratio)[0]


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _start_level(
    total: int,
    scaling: MinScaling,
    first: int,
    last: int,
    r: int,
    spec_min: Int64Array,
    request: Int64Array,
    weight: Int64Array,
    effective_min: Int64Array,
    runtime: Int64Array,
    runtime_present: BoolArray,
    work: Int64Array,
) -> tuple[int, int, int, int]:
    """Borrowers start at their (effective) min, the others get their request.

    Returns the pool left, the number of borrowers and the sum of their weights (hi, lo). The pool
    is only tracked while positive: once it is spent, its exact deficit is irrelevant.
    """
    pool = total
    count = 0
    weight_hi = 0
    weight_lo = 0
    for c in range(first, last):
        floor = _effective_min(spec_min[c, r], total, scaling)
        effective_min[c, r] = floor
        runtime_present[c, r] = True
        if request[c, r] > floor:
            runtime[c, r] = floor
            work[MEMBER, count] = c
            count += 1
            weight_hi, weight_lo = wide_add(weight_hi, weight_lo, weight[c, r])
        else:
            runtime[c, r] = request[c, r]
        if pool > 0:
            pool -= runtime[c, r]
    return pool, count, weight_hi, weight_lo


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _absorb_shares(
    count: int,
    r: int,
    request: Int64Array,
    weight: Int64Array,
    runtime: Int64Array,
    work: Int64Array,
) -> tuple[int, int, int, int]:
    """Add the shares; satisfied borrowers leave and return their excess.

    Returns the next pool, the borrowers left (kept in order) and the sum of their weights.
    """
    excess = 0
    kept = 0
    weight_hi = 0
    weight_lo = 0
    for j in range(count):
        c = work[MEMBER, j]
        level = runtime[c, r] + work[SHARE, j]
        if level >= request[c, r]:
            excess += level - request[c, r]
            runtime[c, r] = request[c, r]
        else:
            runtime[c, r] = level
            work[MEMBER, kept] = c
            kept += 1
            weight_hi, weight_lo = wide_add(weight_hi, weight_lo, weight[c, r])
    return excess, kept, weight_hi, weight_lo


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _share_pool(
    pool: int,
    count: int,
    weight_hi: int,
    weight_lo: int,
    r: int,
    request: Int64Array,
    weight: Int64Array,
    runtime: Int64Array,
    work: Int64Array,
) -> None:
    """Rounds of sharing while there is pool and borrowers with weight to take it."""
    while pool > 0 and count > 0 and (weight_hi > 0 or weight_lo > 0):
        split_pool(pool, count, weight_hi, weight_lo, weight, r, work)
        pool, count, weight_hi, weight_lo = _absorb_shares(count, r, request, weight, runtime, work)


# -- the tree ---------------------------------------------------------------------------------


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _saturating_add(a: int, b: int) -> int:
    """``min(a + b, MAXV)`` for ``0 <= a, b <= MAXV`` (the sum fits in int64)."""
    return min(a + b, MAXV)


@numba.njit(cache=True, error_model="numpy")
def _sum_bottom_up(
    child_start: Int64Array,
    self_request: Int64Array,
    self_used: Int64Array,
    self_np_request: Int64Array,
    self_np_used: Int64Array,
    request_floor: Int64Array,
    cap: Int64Array,
    child_request: Int64Array,
    request: Int64Array,
    limited_request: Int64Array,
    used: Int64Array,
    np_request: Int64Array,
    np_used: Int64Array,
) -> None:
    """Requests and usage from the leaves up (children have larger indices than parents)."""
    resources = self_request.shape[1]
    for i in range(child_start.shape[0] - 2, -1, -1):
        for r in range(resources):
            child_request[i, r] = self_request[i, r]
            used[i, r] = self_used[i, r]
            np_request[i, r] = self_np_request[i, r]
            np_used[i, r] = self_np_used[i, r]
        for c in range(child_start[i], child_start[i + 1]):
            for r in range(resources):
                child_request[i, r] = _saturating_add(child_request[i, r], limited_request[c, r])
                used[i, r] = _saturating_add(used[i, r], used[c, r])
                np_request[i, r] = _saturating_add(np_request[i, r], np_request[c, r])
                np_used[i, r] = _saturating_add(np_used[i, r], np_used[c, r])
        for r in range(resources):
            request[i, r] = max(child_request[i, r], request_floor[i, r])
            limited_request[i, r] = min(request[i, r], cap[i, r])


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _lend_nothing(
    first: int,
    last: int,
    r: int,
    spec_min: Int64Array,
    effective_min: Int64Array,
    runtime: Int64Array,
    runtime_present: BoolArray,
) -> None:
    """A resource the parent does not distribute: no runtime, mins as specified."""
    for c in range(first, last):
        runtime[c, r] = 0
        runtime_present[c, r] = False
        effective_min[c, r] = spec_min[c, r]


@numba.njit(cache=True, error_model="numpy")
def _fill_top_down(
    child_start: Int64Array,
    spec_min: Int64Array,
    limited_request: Int64Array,
    weight: Int64Array,
    distributes: BoolArray,
    scale_min: bool,
    effective_min: Int64Array,
    runtime: Int64Array,
    runtime_present: BoolArray,
) -> None:
    """Each parent's runtime water-filled among its children, in BFS order (root already set)."""
    work = new_work(int(np.max(child_start[1:] - child_start[:-1])))
    for p in range(child_start.shape[0] - 1):
        first = child_start[p]
        last = child_start[p + 1]
        if first == last:
            continue
        for r in range(runtime.shape[1]):
            if not distributes[p, r]:
                _lend_nothing(first, last, r, spec_min, effective_min, runtime, runtime_present)
                continue
            total = runtime[p, r]
            present = runtime_present[p, r]
            scaling = _min_scaling(total, present, scale_min, first, last, r, spec_min)
            pool, count, weight_hi, weight_lo = _start_level(
                total,
                scaling,
                first,
                last,
                r,
                spec_min,
                limited_request,
                weight,
                effective_min,
                runtime,
                runtime_present,
                work,
            )
            _share_pool(
                pool, count, weight_hi, weight_lo, r, limited_request, weight, runtime, work
            )


#: The int64 outputs, in ``SolveResult`` order, as planes of one block.
_CHILD_REQUEST, _REQUEST, _LIMITED_REQUEST, _USED, _NP_REQUEST, _NP_USED = 0, 1, 2, 3, 4, 5
_EFFECTIVE_MIN, _RUNTIME, _INT_OUTPUTS = 6, 7, 8


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _solve_tree_kernel(
    child_start: Int64Array,
    self_request: Int64Array,
    self_used: Int64Array,
    self_np_request: Int64Array,
    self_np_used: Int64Array,
    spec_min: Int64Array,
    request_floor: Int64Array,
    cap: Int64Array,
    weight: Int64Array,
    distributes: BoolArray,
    total: Int64Array,
    total_present: BoolArray,
    scale_min: bool,
    out: Int64Array,
    runtime_present: BoolArray,
) -> None:
    """The whole solve on validated arrays, into ``out[k]`` (``SolveResult`` order) and present.

    Every output cell is written (each node but the root is some parent's child), so the outputs
    may start uninitialized.
    """
    _sum_bottom_up(
        child_start,
        self_request,
        self_used,
        self_np_request,
        self_np_used,
        request_floor,
        cap,
        out[_CHILD_REQUEST],
        out[_REQUEST],
        out[_LIMITED_REQUEST],
        out[_USED],
        out[_NP_REQUEST],
        out[_NP_USED],
    )
    effective_min = out[_EFFECTIVE_MIN]
    runtime = out[_RUNTIME]
    for r in range(total.shape[0]):
        effective_min[0, r] = 0
        runtime[0, r] = total[r]
        runtime_present[0, r] = total_present[r]
    _fill_top_down(
        child_start,
        spec_min,
        out[_LIMITED_REQUEST],
        weight,
        distributes,
        scale_min,
        effective_min,
        runtime,
        runtime_present,
    )


# -- public entry points ----------------------------------------------------------------------


def solve_tree(tree: TreeArrays, scale_min: bool) -> SolveResult:
    """Solve one quota tree (see ``TreeArrays`` for the layout; values in ``0..MAXV``)."""
    tree = checked_tree(tree)
    shape = tree.self_request.shape
    # One block for the int64 outputs: numpy backs large blocks with transparent huge pages, which
    # spares thousands of page faults (most of the cost of eight separately allocated arrays).
    out = np.empty((_INT_OUTPUTS, *shape), dtype=np.int64)
    runtime_present = np.empty(shape, dtype=np.bool_)
    _solve_tree_kernel(*tree, bool(scale_min), out, runtime_present)
    return SolveResult._make([*out, runtime_present])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _water_fill_kernel(
    total: int, request: Int64Array, floor: Int64Array, weight: Int64Array
) -> Int64Array:
    siblings = request.shape[0]
    runtime = np.zeros((siblings, 1), dtype=np.int64)
    floors = np.zeros((siblings, 1), dtype=np.int64)
    present = np.zeros((siblings, 1), dtype=np.bool_)
    work = new_work(siblings)
    no_scaling = (False, 0, 0, -1.0)
    pool, count, weight_hi, weight_lo = _start_level(
        total, no_scaling, 0, siblings, 0, floor, request, weight, floors, runtime, present, work
    )
    _share_pool(pool, count, weight_hi, weight_lo, 0, request, weight, runtime, work)
    return runtime[:, 0].copy()


def water_fill(
    total: int, request: Int64Array, floor: Int64Array, weight: Int64Array
) -> Int64Array:
    """One level, one resource: the siblings' runtimes when their parent has ``total``."""
    return _water_fill_kernel(int(total), _column(request), _column(floor), _column(weight))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _split_kernel(pool: int, weight: Int64Array) -> Int64Array:
    members = weight.shape[0]
    work = new_work(members)
    weight_hi = 0
    weight_lo = 0
    for i in range(members):
        work[MEMBER, i] = i
        weight_hi, weight_lo = wide_add(weight_hi, weight_lo, weight[i, 0])
    if weight_hi > 0 or weight_lo > 0:
        split_pool(pool, members, weight_hi, weight_lo, weight, 0, work)
    return work[SHARE, :members].copy()


def largest_remainder_split(pool: int, weight: Int64Array) -> Int64Array:
    """One round of sharing: ``pool`` split exactly by ``weight`` (zeros if they sum to 0)."""
    return _split_kernel(int(pool), _column(weight))


def _column(values: Int64Array) -> Int64Array:
    """A 1-d array as one int64 column of a C-contiguous 2-d array (what the kernels index)."""
    return np.ascontiguousarray(values, dtype=np.int64).reshape(-1, 1)
