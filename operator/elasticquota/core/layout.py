"""One quota tree packed into the flat integer arrays the solver kernel works on.

Node 0 is the tree's virtual root (``koordinator-root-quota``); quotas follow in breadth-first order
with siblings sorted by name, so that every node's children are one contiguous index range and "ties
broken by name" means "ties broken by index". The static part (mins, caps, weights, which keys each
level distributes) is built once per topology change; pod sums live in ``PodSums`` and change row by
row as pods come and go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.models import QuotaSpec
from elasticquota.core.resources import ResourceList
from elasticquota.core.topology import Topology

#: Values beyond this are clamped: 2**62 - 1 units (4 EiB of memory, 4.6e15 cpu cores).
MAX_UNITS = 2**62 - 1

Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def clamp(value: int) -> int:
    """A value the kernels accept: between 0 and ``MAX_UNITS``."""
    return min(max(value, 0), MAX_UNITS)


@dataclass(slots=True)
class TreeLayout:
    """Static arrays of one tree: topology, mins, caps, weights and distributed keys."""

    tree_id: str
    names: list[str]
    index: dict[str, int]
    keys: list[str]
    child_start: Int64Array
    spec_min: Int64Array
    request_floor: Int64Array
    cap: Int64Array
    weight: Int64Array
    distributes: BoolArray

    @property
    def size(self) -> int:
        return len(self.names)

    def row(self, values: Mapping[str, int]) -> list[int]:
        """A resource list as one row over this tree's keys (exact ints, absent = 0)."""
        return [values.get(key, 0) for key in self.keys]


def build_layout(
    topology: Topology, tree_id: str, extra_keys: set[str] | frozenset[str] = frozenset()
) -> TreeLayout:
    """Pack the valid quotas of one tree; ``extra_keys`` adds resources seen only in its total."""
    names = [ROOT_QUOTA, *topology.breadth_first(tree_id)]
    specs = [topology.quotas[name] for name in names[1:]]
    keys = sorted(extra_keys.union(*(_keys_of(spec) for spec in specs)))
    layout = TreeLayout(
        tree_id=tree_id,
        names=names,
        index={name: position for position, name in enumerate(names)},
        keys=keys,
        child_start=_child_start(topology, tree_id, names),
        spec_min=np.zeros((len(names), len(keys)), dtype=np.int64),
        request_floor=np.zeros((len(names), len(keys)), dtype=np.int64),
        cap=np.full((len(names), len(keys)), MAX_UNITS, dtype=np.int64),
        weight=np.zeros((len(names), len(keys)), dtype=np.int64),
        distributes=np.zeros((len(names), len(keys)), dtype=np.bool_),
    )
    for position, spec in enumerate(specs, start=1):
        _fill_quota_row(layout, position, spec)
    layout.distributes[0] = layout.distributes[1:].any(axis=0) if specs else False
    return layout


def _keys_of(spec: QuotaSpec) -> set[str]:
    return set(spec.max) | set(spec.min) | set(spec.effective_weight)


def _child_start(topology: Topology, tree_id: str, names: list[str]) -> Int64Array:
    """children of node i are ``child_start[i] .. child_start[i+1]-1`` (BFS makes them
    contiguous)."""
    counts = [len(topology.top_level.get(tree_id, []))]
    counts += [len(topology.children.get(name, [])) for name in names[1:]]
    starts = np.empty(len(names) + 1, dtype=np.int64)
    starts[0] = 1
    starts[1:] = 1 + np.cumsum(counts)
    return starts


def _fill_quota_row(layout: TreeLayout, position: int, spec: QuotaSpec) -> None:
    """Everything the kernel needs to know about one quota, per resource."""
    weights = spec.effective_weight
    for column, key in enumerate(layout.keys):
        minimum = spec.min.get(key, 0)
        layout.spec_min[position, column] = clamp(minimum)
        layout.request_floor[position, column] = clamp(request_floor(spec, key))
        layout.cap[position, column] = clamp(request_cap(spec, key))
        layout.weight[position, column] = clamp(weights.get(key, 0))
        layout.distributes[position, column] = key in spec.max


def request_floor(spec: QuotaSpec, key: str) -> int:
    """What a quota's request is raised to: its min when it does not lend, min - lending limit.

    ``allow-lent-resource: "false"`` is a lending limit of 0 on every resource.
    """
    minimum = spec.min.get(key, 0)
    if not spec.allow_lent:
        return minimum
    if spec.lending_limit is not None and key in spec.lending_limit:
        return max(0, minimum - spec.lending_limit[key])
    return 0


def request_cap(spec: QuotaSpec, key: str) -> int:
    """The limited request's cap: max, and min + borrowing limit when one is set."""
    cap = spec.max.get(key, MAX_UNITS)
    if spec.borrowing_limit is not None and key in spec.borrowing_limit:
        cap = min(cap, spec.min.get(key, 0) + spec.borrowing_limit[key])
    return cap


def total_row(layout: TreeLayout, total: ResourceList) -> tuple[Int64Array, BoolArray]:
    """The root's distributable amount and which keys it has."""
    values = np.array([clamp(total.get(key, 0)) for key in layout.keys], dtype=np.int64)
    present = np.array([key in total for key in layout.keys], dtype=np.bool_)
    return values, present
