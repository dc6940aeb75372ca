"""The input and output arrays of the tree solver, named once for the kernel and its twin.

``TreeArrays`` lists the inputs in the order ``solve_tree`` takes them positionally, so a caller
holding one calls ``solve_tree(tree, scale_min)``. ``SolveResult`` names the output arrays.
Both kernels (numba and plain Python) accept and return exactly these, which lets the tests compare
them field by field.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

#: The largest value any input may hold (the caller clamps); sums saturate at it.
MAXV = 2**62 - 1

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class TreeArrays(NamedTuple):
    """One quota tree in BFS order: N nodes (node 0 is the virtual root), R resources.

    Every value must lie in ``0..MAXV`` (the caller clamps; the kernels do not check). Node 0's
    rows: own sums, mins, floors and weights 0, cap ``MAXV``.
    """

    child_start: Int64Array  # [N+1]: children of i are child_start[i] .. child_start[i+1]-1
    self_request: Int64Array  # [N, R]
    self_used: Int64Array  # [N, R]
    self_np_request: Int64Array  # [N, R]
    self_np_used: Int64Array  # [N, R]
    spec_min: Int64Array  # [N, R]
    request_floor: Int64Array  # [N, R]
    cap: Int64Array  # [N, R]
    weight: Int64Array  # [N, R]
    distributes: BoolArray  # [N, R]
    total: Int64Array  # [R]
    total_present: BoolArray  # [R]


class SolveResult(NamedTuple):
    """Per node and resource: the bottom-up sums and the top-down runtime quota."""

    child_request: Int64Array
    request: Int64Array
    limited_request: Int64Array
    used: Int64Array
    np_request: Int64Array
    np_used: Int64Array
    effective_min: Int64Array
    runtime: Int64Array
    runtime_present: BoolArray


_NODE_FIELDS = (
    "self_request",
    "self_used",
    "self_np_request",
    "self_np_used",
    "spec_min",
    "request_floor",
    "cap",
    "weight",
    "distributes",
)


def checked_tree(tree: TreeArrays) -> TreeArrays:
    """The same tree as C-contiguous, writable int64/bool arrays; ValueError on wrong shapes.

    Converting here keeps one compiled specialization of the kernel (and its disk cache) valid for
    every caller: numba compiles anew for every other layout, dtype or read-only flag. Arrays that
    already qualify are passed through without a copy.
    """
    child_start = _kernel_array(tree.child_start, np.int64)
    if child_start.ndim != 1 or child_start.shape[0] < 1:
        raise ValueError("child_start must be a 1-d array of N+1 offsets")
    nodes = child_start.shape[0] - 1
    total = _kernel_array(tree.total, np.int64)
    resources = total.shape[0] if total.ndim == 1 else -1
    converted: dict[str, npt.NDArray[Any]] = {}
    for name in _NODE_FIELDS:
        array = _kernel_array(getattr(tree, name), np.bool_ if name == "distributes" else np.int64)
        if array.shape != (nodes, resources):
            raise ValueError(f"{name} has shape {array.shape}, expected {(nodes, resources)}")
        converted[name] = array
    total_present = _kernel_array(tree.total_present, np.bool_)
    if total_present.shape != (resources,):
        raise ValueError(f"total_present has shape {total_present.shape}, expected {(resources,)}")
    _check_child_ranges(child_start)
    return TreeArrays(
        child_start=child_start, total=total, total_present=total_present, **converted
    )


def _kernel_array(values: npt.ArrayLike, dtype: type[np.generic]) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.ascontiguousarray(values, dtype=dtype)
    return array if array.flags.writeable else array.copy()


def _check_child_ranges(child_start: Int64Array) -> None:
    """Child ranges tile nodes 1..N-1 in order, each after its parent (a BFS layout)."""
    nodes = child_start.shape[0] - 1
    if nodes == 0:
        raise ValueError("a tree has at least its virtual root (node 0)")
    starts = child_start[:-1]
    ends = child_start[1:]
    tiles = child_start[0] == 1 and child_start[-1] == nodes
    if not tiles or np.any(ends < starts) or np.any(starts <= np.arange(nodes)):
        raise ValueError("child_start does not describe BFS child ranges")
