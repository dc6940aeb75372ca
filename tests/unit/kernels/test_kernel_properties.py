"""Property tests: the numba kernel equals its plain-Python twin; the water-fill invariants hold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from elasticquota.kernels import reference, waterfill
from elasticquota.kernels.arrays import MAXV, SolveResult, TreeArrays

EDGES = [0, 1, 2, 2**31, 2**50, 2**53 + 1, 2**61, MAXV - 1, MAXV]

#: Zeros, small counts (gpu), millicores, bytes, Ei-scale bytes and the clamping edges.
values = st.one_of(
    st.just(0),
    st.integers(0, 16),
    st.integers(0, 10**6),
    st.integers(0, 2**45),
    st.integers(2**58, MAXV),
    st.sampled_from(EDGES),
)


@st.composite
def bfs_child_start(draw: st.DrawFn, max_nodes: int) -> np.ndarray[Any, Any]:
    """Child ranges of a random tree in BFS order: parents of nodes 1.. never decrease."""
    nodes = draw(st.integers(1, max_nodes))
    parents = [0]
    for node in range(2, nodes):
        step = draw(st.sampled_from([0, 0, 0, 1, 1, 2]))
        parents.append(min(parents[-1] + step, node - 1))
    counts = np.bincount(np.array(parents[: nodes - 1], dtype=np.int64), minlength=nodes)
    child_start = np.empty(nodes + 1, dtype=np.int64)
    child_start[0] = 1
    child_start[1:] = 1 + np.cumsum(counts)
    return child_start


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 24) -> TreeArrays:
    child_start = draw(bfs_child_start(max_nodes))
    nodes, resources = len(child_start) - 1, draw(st.integers(1, 4))
    shape = (nodes, resources)

    def matrix() -> np.ndarray[Any, Any]:
        array = draw(hnp.arrays(np.int64, shape, elements=values))
        array[0] = 0
        return array

    cap = matrix()
    cap[0] = MAXV
    return TreeArrays(
        child_start=child_start,
        self_request=matrix(),
        self_used=matrix(),
        self_np_request=matrix(),
        self_np_used=matrix(),
        spec_min=matrix(),
        request_floor=matrix(),
        cap=cap,
        weight=matrix(),
        distributes=draw(
            hnp.arrays(np.bool_, shape, elements=st.sampled_from([True, True, True, False]))
        ),
        total=draw(hnp.arrays(np.int64, (resources,), elements=values)),
        total_present=draw(hnp.arrays(np.bool_, (resources,), elements=st.booleans())),
    )


def assert_same(kernel: SolveResult, twin: SolveResult) -> None:
    for name in SolveResult._fields:
        expected = getattr(twin, name)
        actual = getattr(kernel, name)
        assert actual.dtype == expected.dtype, name
        assert np.array_equal(actual, expected), name


def families(tree: TreeArrays, result: SolveResult) -> list[tuple[int, int, slice]]:
    """(parent, resource, children) of every distributed resource of every parent."""
    starts = tree.child_start.tolist()
    return [
        (parent, r, slice(starts[parent], starts[parent + 1]))
        for parent in range(len(starts) - 1)
        for r in range(result.runtime.shape[1])
        if starts[parent + 1] > starts[parent] and tree.distributes[parent, r]
    ]


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEAVY = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(tree=trees(), scale_min=st.booleans())
def test_kernel_equals_twin(tree: TreeArrays, scale_min: bool) -> None:
    assert_same(waterfill.solve_tree(tree, scale_min), reference.solve_tree(tree, scale_min))


@pytest.mark.slow
@HEAVY
@given(tree=trees(max_nodes=80), scale_min=st.booleans())
def test_kernel_equals_twin_on_larger_trees(tree: TreeArrays, scale_min: bool) -> None:
    assert_same(waterfill.solve_tree(tree, scale_min), reference.solve_tree(tree, scale_min))


@FAST
@given(tree=trees(), scale_min=st.booleans())
def test_deterministic_and_inputs_untouched(tree: TreeArrays, scale_min: bool) -> None:
    copies = [np.copy(array) for array in tree]
    first = waterfill.solve_tree(tree, scale_min)
    assert_same(waterfill.solve_tree(tree, scale_min), first)
    for original, now in zip(copies, tree, strict=True):
        assert np.array_equal(original, now)


@FAST
@given(tree=trees(), scale_min=st.booleans())
def test_runtime_invariants(tree: TreeArrays, scale_min: bool) -> None:
    result = waterfill.solve_tree(tree, scale_min)
    for parent, r, children in families(tree, result):
        limited = result.limited_request[children, r]
        runtime = result.runtime[children, r]
        floor = result.effective_min[children, r]
        assert (runtime <= limited).all()  # nobody gets more than its limited request
        lending = limited <= floor
        assert (runtime[lending] == limited[lending]).all()  # lenders get their request
        borrowing = ~lending
        assert (runtime[borrowing] >= floor[borrowing]).all()
        total = int(result.runtime[parent, r])
        if sum(int(m) for m in tree.spec_min[children, r]) <= total:
            assert sum(int(value) for value in runtime) <= total  # mins fit: no overcommit


@FAST
@given(tree=trees(), scale_min=st.booleans())
def test_not_distributed_means_absent(tree: TreeArrays, scale_min: bool) -> None:
    result = waterfill.solve_tree(tree, scale_min)
    starts = tree.child_start.tolist()
    for parent in range(len(starts) - 1):
        children = slice(starts[parent], starts[parent + 1])
        absent = ~tree.distributes[parent]
        assert not result.runtime_present[children][:, absent].any()
        assert (result.runtime[children][:, absent] == 0).all()
        assert np.array_equal(
            result.effective_min[children][:, absent], tree.spec_min[children][:, absent]
        )


# -- one level ------------------------------------------------------------------------------

level_values = st.one_of(
    st.integers(0, 20), st.integers(0, 2**40), st.integers(2**55, MAXV), st.sampled_from(EDGES)
)


@st.composite
def levels(draw: st.DrawFn) -> tuple[int, list[int], list[int], list[int]]:
    siblings = draw(st.integers(0, 70))
    pick = st.lists(level_values, min_size=siblings, max_size=siblings)
    same_weight = draw(st.booleans())
    weight = [draw(level_values)] * siblings if same_weight else draw(pick)
    return draw(level_values), draw(pick), draw(pick), weight


@FAST
@given(level=levels())
def test_level_kernel_equals_twin(level: tuple[int, list[int], list[int], list[int]]) -> None:
    total, request, floor, weight = level
    kernel = waterfill.water_fill(total, np.array(request), np.array(floor), np.array(weight))
    assert kernel.tolist() == reference.water_fill(total, request, floor, weight)


@FAST
@given(level=levels())
def test_level_hands_out_the_whole_pool(level: tuple[int, list[int], list[int], list[int]]) -> None:
    total, request, floor, weight = level
    kernel = waterfill.water_fill(total, np.array(request), np.array(floor), np.array(weight))
    runtime = [int(value) for value in kernel]
    starting = sum(min(r, f) for r, f in zip(request, floor, strict=True))
    hungry = [
        i
        for i in range(len(request))
        if runtime[i] < request[i] and weight[i] > 0 and request[i] > floor[i]
    ]
    if starting <= total and hungry:
        assert sum(runtime) == total  # pool left only when no weighted borrower wants more
    if starting <= total:
        assert sum(runtime) <= total


@st.composite
def splits(draw: st.DrawFn) -> tuple[int, list[int]]:
    weight = draw(st.lists(level_values, min_size=1, max_size=90))
    return draw(level_values), weight


@FAST
@given(split=splits())
def test_split_shares_sum_to_the_pool(split: tuple[int, list[int]]) -> None:
    pool, weight = split
    shares = [int(value) for value in waterfill.largest_remainder_split(pool, np.array(weight))]
    assert shares == reference.largest_remainder_split(pool, weight)
    total_weight = sum(weight)
    if total_weight == 0:
        assert shares == [0] * len(weight)
        return
    assert sum(shares) == pool
    for share, w in zip(shares, weight, strict=True):
        assert share - w * pool // total_weight in (0, 1)
