"""The plain-Python twin of the tree solver: the specification the numba kernels are held to.

It computes exactly what ``waterfill.solve_tree`` computes, written as directly as possible with
Python's arbitrary-precision ints, so that there is nothing to get wrong about overflow or rounding.
It is far too slow for production (see ``benchmarks/bench_solver.py``); the tests compare the
kernel against it array by array.

The algorithm: requests and usage are summed bottom-up (saturating at ``MAXV``); then, top-down,
each parent's runtime quota is water-filled among its children (Koordinator's runtime quota
calculator, with largest-remainder rounding of every round of sharing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elasticquota.kernels.arrays import (
    MAXV,
    Int64Array,
    SolveResult,
    TreeArrays,
    checked_tree,
)


def largest_remainder_split(pool: int, weight: Sequence[int]) -> list[int]:
    """``pool`` shared by weight: floors, then one leftover unit each to the largest remainders.

    Ties go to the lower index; zero weights get nothing; all zeros if the weights sum to 0.
    """
    total_weight = sum(weight)
    if total_weight == 0:
        return [0] * len(weight)
    shares = [w * pool // total_weight for w in weight]
    remainders = [w * pool % total_weight for w in weight]
    leftover = pool - sum(shares)
    ranked = sorted((i for i, w in enumerate(weight) if w > 0), key=lambda i: (-remainders[i], i))
    for i in ranked[:leftover]:
        shares[i] += 1
    return shares


def water_fill(
    total: int, request: Sequence[int], floor: Sequence[int], weight: Sequence[int]
) -> list[int]:
    """One level, one resource: how ``total`` is shared among siblings.

    A sibling asking for more than its floor is a borrower: it starts at its floor and takes shares
    of the pool by weight, round after round, until it reaches its request. The others get their
    request. The pool is what is left of ``total``; what a satisfied borrower does not need goes
    back into it.
    """
    borrowers = [i for i in range(len(request)) if request[i] > floor[i]]
    runtime = [min(request[i], floor[i]) for i in range(len(request))]
    pool = total - sum(runtime)
    while pool > 0 and borrowers and sum(weight[i] for i in borrowers) > 0:
        shares = largest_remainder_split(pool, [weight[i] for i in borrowers])
        pool = 0
        unsatisfied = []
        for i, share in zip(borrowers, shares, strict=True):
            runtime[i] += share
            if runtime[i] >= request[i]:
                pool += runtime[i] - request[i]
                runtime[i] = request[i]
            else:
                unsatisfied.append(i)
        borrowers = unsatisfied
    return runtime


def effective_mins(total: int, total_present: bool, scale_min: bool, mins: list[int]) -> list[int]:
    """The children's mins, scaled to ``floor(total * min / sum(mins))`` when they do not fit."""
    needed = sum(mins)
    if not (scale_min and total_present and total < needed):
        return list(mins)
    if total <= 0:
        return [0] * len(mins)
    return [total * m // needed for m in mins]


def solve_tree(tree: TreeArrays, scale_min: bool) -> SolveResult:
    """The whole tree, same inputs and outputs as ``waterfill.solve_tree``."""
    tree = checked_tree(tree)
    nodes, resources = tree.self_request.shape
    starts = tree.child_start.tolist()
    children = [range(starts[i], starts[i + 1]) for i in range(nodes)]
    sums = _sum_bottom_up(tree, children)
    effective_min, runtime, runtime_present = _fill_top_down(
        tree, children, sums["limited_request"], scale_min
    )

    def int_array(rows: list[list[int]]) -> Int64Array:
        return np.array(rows, dtype=np.int64).reshape(nodes, resources)

    return SolveResult(
        child_request=int_array(sums["child_request"]),
        request=int_array(sums["request"]),
        limited_request=int_array(sums["limited_request"]),
        used=int_array(sums["used"]),
        np_request=int_array(sums["np_request"]),
        np_used=int_array(sums["np_used"]),
        effective_min=int_array(effective_min),
        runtime=int_array(runtime),
        runtime_present=np.array(runtime_present, dtype=np.bool_).reshape(nodes, resources),
    )


def _sum_bottom_up(tree: TreeArrays, children: list[range]) -> dict[str, list[list[int]]]:
    """child_request, request, limited_request, used, np_request, np_used of every node."""
    nodes, resources = tree.self_request.shape
    own: dict[str, list[list[int]]] = {
        "request": tree.self_request.tolist(),
        "used": tree.self_used.tolist(),
        "np_request": tree.self_np_request.tolist(),
        "np_used": tree.self_np_used.tolist(),
    }
    floor = tree.request_floor.tolist()
    cap = tree.cap.tolist()
    names = ("child_request", "request", "limited_request", "used", "np_request", "np_used")
    sums = {name: [[0] * resources for _ in range(nodes)] for name in names}
    for i in reversed(range(nodes)):
        for r in range(resources):

            def summed(name: str, own_name: str, i: int = i, r: int = r) -> int:
                from_children = sum(sums[name][c][r] for c in children[i])
                return min(own[own_name][i][r] + from_children, MAXV)

            sums["child_request"][i][r] = summed("limited_request", "request")
            sums["request"][i][r] = max(sums["child_request"][i][r], floor[i][r])
            sums["limited_request"][i][r] = min(sums["request"][i][r], cap[i][r])
            for name in ("used", "np_request", "np_used"):
                sums[name][i][r] = summed(name, name)
    return sums


def _fill_top_down(
    tree: TreeArrays, children: list[range], limited_request: list[list[int]], scale_min: bool
) -> tuple[list[list[int]], list[list[int]], list[list[bool]]]:
    """effective_min, runtime and runtime_present of every node, parents before children."""
    nodes, resources = tree.self_request.shape
    spec_min = tree.spec_min.tolist()
    weight = tree.weight.tolist()
    distributes = tree.distributes.tolist()
    effective = [[0] * resources for _ in range(nodes)]
    runtime = [[0] * resources for _ in range(nodes)]
    present = [[False] * resources for _ in range(nodes)]
    runtime[0] = tree.total.tolist()
    present[0] = tree.total_present.tolist()
    for p in range(nodes):
        kids = children[p]
        for r in range(resources):
            mins = [spec_min[c][r] for c in kids]
            if not distributes[p][r]:
                for c, minimum in zip(kids, mins, strict=True):
                    effective[c][r] = minimum
                continue
            floors = effective_mins(runtime[p][r], present[p][r], scale_min, mins)
            shares = water_fill(
                runtime[p][r],
                [limited_request[c][r] for c in kids],
                floors,
                [weight[c][r] for c in kids],
            )
            for c, floor, share in zip(kids, floors, shares, strict=True):
                effective[c][r] = floor
                runtime[c][r] = share
                present[c][r] = True
    return effective, runtime, present
