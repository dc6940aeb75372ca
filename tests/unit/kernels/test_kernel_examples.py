"""Worked examples of the water-fill, checked on the numba kernel and on its plain-Python twin."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from elasticquota.kernels import reference, waterfill
from elasticquota.kernels.arrays import MAXV, SolveResult, TreeArrays, checked_tree
from elasticquota.kernels.warmup import warm_up

SOLVERS = [
    pytest.param(waterfill.solve_tree, id="numba"),
    pytest.param(reference.solve_tree, id="twin"),
]
Solver = Callable[..., SolveResult]


def kernel_water_fill(
    total: int, request: list[int], floor: list[int], weight: list[int]
) -> list[int]:
    runtime = waterfill.water_fill(total, np.array(request), np.array(floor), np.array(weight))
    return [int(value) for value in runtime]


def kernel_split(pool: int, weight: list[int]) -> list[int]:
    return [int(value) for value in waterfill.largest_remainder_split(pool, np.array(weight))]


WATER_FILLS = [
    pytest.param(kernel_water_fill, id="numba"),
    pytest.param(reference.water_fill, id="twin"),
]
SPLITS = [
    pytest.param(kernel_split, id="numba"),
    pytest.param(reference.largest_remainder_split, id="twin"),
]


def family(
    total: Sequence[int],
    children: Sequence[dict[str, Sequence[int]]],
    *,
    present: Sequence[bool] | None = None,
    distributes: Sequence[bool] | None = None,
) -> TreeArrays:
    """A root with leaf children; each child gives per resource: min, request, weight, ..."""
    nodes, resources = len(children) + 1, len(total)

    def column(name: str, default: int) -> np.ndarray[Any, Any]:
        rows = [[0] * resources] + [
            list(child.get(name, [default] * resources)) for child in children
        ]
        rows[0] = [MAXV] * resources if name == "cap" else [0] * resources
        return np.array(rows, dtype=np.int64)

    root_distributes = [True] * resources if distributes is None else list(distributes)
    return TreeArrays(
        child_start=np.array([1] + [nodes] * nodes, dtype=np.int64),
        self_request=column("request", 0),
        self_used=column("used", 0),
        self_np_request=column("np_request", 0),
        self_np_used=column("np_used", 0),
        spec_min=column("min", 0),
        request_floor=column("floor", 0),
        cap=column("cap", MAXV),
        weight=column("weight", 0),
        distributes=np.array([root_distributes] + [[False] * resources] * len(children)),
        total=np.array(total, dtype=np.int64),
        total_present=np.array([True] * resources if present is None else present),
    )


def runtimes(result: SolveResult) -> list[list[int]]:
    return [[int(value) for value in row] for row in result.runtime[1:]]


# -- one level ------------------------------------------------------------------------------


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_worked_example(water_fill: Callable[..., list[int]]) -> None:
    # initial 5/15/20/15, pool 45, shares 14/12/19 -> B capped at 20 (returns 9), 9 split 50:80
    runtime = water_fill(100, [5, 20, 40, 70], [10, 15, 20, 15], [40, 60, 50, 80])
    assert runtime == [5, 20, 35, 40]


@pytest.mark.parametrize("split", SPLITS)
def test_worked_example_rounds(split: Callable[..., list[int]]) -> None:
    assert split(45, [60, 50, 80]) == [14, 12, 19]
    assert split(9, [50, 80]) == [3, 6]


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_gpu_units_go_to_the_first_names(water_fill: Callable[..., list[int]]) -> None:
    # borrower-00 .. borrower-09: equal weights, equal remainders, ties broken by name (index)
    runtime = water_fill(3, [1] * 10, [0] * 10, [1] * 10)
    assert runtime == [1, 1, 1] + [0] * 7


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_two_millicores_over_three_borrowers(water_fill: Callable[..., list[int]]) -> None:
    assert water_fill(2, [1000, 1000, 1000], [0, 0, 0], [7, 7, 7]) == [1, 1, 0]


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_zero_weight_borrower_stays_at_its_floor(water_fill: Callable[..., list[int]]) -> None:
    # b has no weight: it keeps its min; a takes what it asks, the rest of the pool stays unused
    assert water_fill(100, [30, 50], [10, 10], [5, 0]) == [30, 10]
    assert water_fill(100, [30, 50], [10, 10], [0, 0]) == [10, 10]


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_idle_lending_child_gets_nothing(water_fill: Callable[..., list[int]]) -> None:
    assert water_fill(100, [0, 80], [40, 20], [1, 1]) == [0, 80]


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_landing_exactly_on_the_request_leaves_the_borrowers(
    water_fill: Callable[..., list[int]],
) -> None:
    # pool 6 over weights 3:4 -> 2 + 1 and 3: the first lands on its request 3 and stops
    # borrowing; were it kept (need 0) it would take part in the rounding of later rounds
    assert water_fill(10, [3, 10, 3, 1], [0, 0, 6, 1], [3, 4, 3, 1]) == [3, 3, 3, 1]
    assert water_fill(27, [5, 10, 11, 6], [1, 0, 4, 0], [4, 3, 3, 4]) == [5, 6, 10, 6]


@pytest.mark.parametrize("water_fill", WATER_FILLS)
def test_mins_above_total_are_kept_at_one_level(water_fill: Callable[..., list[int]]) -> None:
    # one level does not scale: runtimes stay at the floors even when they exceed the total
    assert water_fill(10, [20, 20], [6, 9], [1, 1]) == [6, 9]


@pytest.mark.parametrize("split", SPLITS)
def test_split_is_exact(split: Callable[..., list[int]]) -> None:
    assert split(10, [1, 1, 1]) == [4, 3, 3]
    assert split(10, [0, 0]) == [0, 0]
    assert split(7, [0, 3, 0, 1]) == [0, 5, 0, 2]
    assert sum(split(1000, [3, 7, 11, 13, 17])) == 1000


# -- the tree -------------------------------------------------------------------------------


@pytest.mark.parametrize("solve", SOLVERS)
def test_worked_example_in_a_tree(solve: Solver) -> None:
    tree = family(
        [100],
        [
            {"min": [10], "request": [5], "weight": [40]},
            {"min": [15], "request": [20], "weight": [60]},
            {"min": [20], "request": [40], "weight": [50]},
            {"min": [15], "request": [70], "weight": [80]},
        ],
    )
    result = solve(tree, True)
    assert runtimes(result) == [[5], [20], [35], [40]]
    assert result.runtime[0].tolist() == [100]
    assert result.request[0].tolist() == [135]
    assert result.runtime_present.all()


@pytest.mark.parametrize("solve", SOLVERS)
def test_mins_that_do_not_fit_are_scaled(solve: Solver) -> None:
    tree = family(
        [10],
        [
            {"min": [6], "request": [20], "weight": [1]},
            {"min": [9], "request": [20], "weight": [1]},
        ],
    )
    scaled = solve(tree, True)
    assert scaled.effective_min[1:].tolist() == [[4], [6]]
    assert runtimes(scaled) == [[4], [6]]
    kept = solve(tree, False)
    assert kept.effective_min[1:].tolist() == [[6], [9]]
    assert runtimes(kept) == [[6], [9]]  # 15 > 10: runtimes sum above the total


@pytest.mark.parametrize("solve", SOLVERS)
def test_scaling_needs_a_present_total(solve: Solver) -> None:
    tree = family(
        [10], [{"min": [6], "request": [20]}, {"min": [9], "request": [20]}], present=[False]
    )
    result = solve(tree, True)
    assert result.effective_min[1:].tolist() == [[6], [9]]
    assert result.runtime_present[0].tolist() == [False]
    assert result.runtime_present[1:].all()


@pytest.mark.parametrize("solve", SOLVERS)
def test_zero_total_scales_mins_to_zero(solve: Solver) -> None:
    tree = family([0], [{"min": [6], "request": [20]}, {"min": [9], "request": [20]}])
    assert solve(tree, True).effective_min[1:].tolist() == [[0], [0]]


@pytest.mark.parametrize("solve", SOLVERS)
def test_undistributed_resource(solve: Solver) -> None:
    tree = family(
        [100, 100],
        [{"min": [5, 5], "request": [50, 50], "weight": [1, 1]}],
        distributes=[True, False],
    )
    result = solve(tree, True)
    assert result.runtime[1].tolist() == [50, 0]
    assert result.runtime_present[1].tolist() == [True, False]
    assert result.effective_min[1].tolist() == [5, 5]


@pytest.mark.parametrize("solve", SOLVERS)
def test_requests_floors_caps_and_saturation(solve: Solver) -> None:
    child_start = np.array([1, 3, 5, 5, 5, 5], dtype=np.int64)  # 0 -> 1, 2; 1 -> 3, 4
    zeros = np.zeros((5, 1), dtype=np.int64)
    request = np.array([[0], [7], [MAXV], [MAXV], [3]], dtype=np.int64)
    used = np.array([[0], [1], [2], [3], [MAXV]], dtype=np.int64)
    floor = np.array([[0], [0], [MAXV], [0], [10]], dtype=np.int64)
    cap = np.array([[MAXV], [100], [MAXV], [MAXV], [MAXV]], dtype=np.int64)
    tree = TreeArrays(
        child_start,
        request,
        used,
        request,
        zeros,
        zeros,
        floor,
        cap,
        zeros,
        np.ones((5, 1), dtype=np.bool_),
        np.array([50], dtype=np.int64),
        np.array([True]),
    )
    result = solve(tree, True)
    # node 4: request 3 raised to its floor 10; node 1: 7 + MAXV + 10 saturates, capped at 100
    assert result.request[:, 0].tolist() == [MAXV, MAXV, MAXV, MAXV, 10]
    assert result.child_request[:, 0].tolist() == [MAXV, MAXV, MAXV, MAXV, 3]
    assert result.limited_request[:, 0].tolist() == [MAXV, 100, MAXV, MAXV, 10]
    assert result.used[:, 0].tolist() == [MAXV, MAXV, 2, 3, MAXV]
    assert result.np_request[:, 0].tolist() == result.child_request[:, 0].tolist()
    assert result.np_used[:, 0].tolist() == [0] * 5


@pytest.mark.parametrize("solve", SOLVERS)
def test_root_only_tree_and_no_resources(solve: Solver) -> None:
    only_root = family([5], [])
    assert solve(only_root, True).runtime.tolist() == [[5]]
    no_resources = family([], [{}, {}])
    result = solve(no_resources, True)
    assert result.runtime.shape == (3, 0)
    assert result.runtime_present.dtype == np.bool_


def test_shapes_are_checked() -> None:
    tree = family([5], [{"min": [1]}])
    with pytest.raises(ValueError, match="spec_min"):
        waterfill.solve_tree(tree._replace(spec_min=np.zeros((2, 2), dtype=np.int64)), True)
    with pytest.raises(ValueError, match="child_start"):
        checked_tree(tree._replace(child_start=np.array([1, 1, 2], dtype=np.int64)))
    with pytest.raises(ValueError, match="total_present"):
        checked_tree(tree._replace(total_present=np.array([True, False])))


def test_inputs_are_left_untouched_and_lists_accepted() -> None:
    tree = family([100], [{"min": [10], "request": [50], "weight": [1]}] * 3)
    before = [array.copy() for array in tree]
    as_lists = TreeArrays(*(array.tolist() for array in tree))
    assert runtimes(waterfill.solve_tree(as_lists, True)) == [[34], [33], [33]]
    for original, now in zip(before, tree, strict=True):
        assert np.array_equal(original, now)


def test_the_warm_up_compiles_the_only_signature_real_solves_use() -> None:
    """Solves after the warm-up, of other shapes, from lists or read-only arrays, compile nothing
    more: the first real solve finds the kernel ready."""
    warmed = warm_up()
    kernel: Any = waterfill._solve_tree_kernel
    if not hasattr(kernel, "signatures"):  # NUMBA_DISABLE_JIT=1: a plain function
        assert not warmed.jitted
        return
    assert warmed.jitted
    assert len(kernel.signatures) == 1
    wide = family([100, 7, 3], [{"min": [10, 1, 1], "request": [50, 9, 2]}] * 5)
    waterfill.solve_tree(wide, False)
    waterfill.solve_tree(TreeArrays(*(array.tolist() for array in wide)), True)
    for array in wide:
        array.setflags(write=False)
    waterfill.solve_tree(wide, True)
    assert len(kernel.signatures) == 1


def test_read_only_inputs_are_accepted() -> None:
    tree = family([100], [{"min": [10], "request": [50], "weight": [1]}] * 3)
    for array in tree:
        array.setflags(write=False)
    assert runtimes(waterfill.solve_tree(tree, True)) == [[34], [33], [33]]
