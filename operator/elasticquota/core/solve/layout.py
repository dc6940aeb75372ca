"""One quota tree packed into the flat integer arrays the solver kernel works on.

Node 0 is the tree's virtual root (``koordinator-root-quota``); quotas follow in breadth-first order
with siblings sorted by name, so that every node's children are one contiguous index range and "ties
broken by name" means "ties broken by index". The static part (mins, caps, weights, which keys each
level distributes) is built once per topology change; pod sums live in ``PodSums`` and change row by
row as pods come and go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.tree.topology import Topology
from elasticquota.kernels.arrays import BoolArray, Int64Array

#: Values beyond this are clamped: 2**62 - 1 units (4 EiB of memory, 4.6e15 cpu cores).
MAX_UNITS = 2**62 - 1


def clamp(value: int) -> int:
    """A value the kernels accept: between 0 and ``MAX_UNITS``."""
    return value if 0 <= value <= MAX_UNITS else min(max(value, 0), MAX_UNITS)


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
    topology: Topology,
    tree_id: str,
    extra_keys: set[str] | frozenset[str] = frozenset(),
    memo: RowMemo | None = None,
) -> TreeLayout:
    """Pack the valid quotas of one tree; ``extra_keys`` adds resources seen only in its total.

    ``memo`` (kept by the caller from one topology to the next) spares rebuilding the rows of a
    quota whose spec object and the tree's keys are those it last saw.
    """
    names = [ROOT_QUOTA, *topology.breadth_first(tree_id)]
    specs = [topology.quotas[name] for name in names[1:]]
    keys = sorted(extra_keys.union(*(_keys_of(spec) for spec in specs)))
    rows = [_remembered_rows(spec, keys, memo) for spec in specs]
    width = len(keys)
    layout = TreeLayout(
        tree_id=tree_id,
        names=names,
        index={name: position for position, name in enumerate(names)},
        keys=keys,
        child_start=_child_start(topology, tree_id, names),
        spec_min=_matrix([0] * width, (row.spec_min for row in rows), np.int64),
        request_floor=_matrix([0] * width, (row.request_floor for row in rows), np.int64),
        cap=_matrix([MAX_UNITS] * width, (row.cap for row in rows), np.int64),
        weight=_matrix([0] * width, (row.weight for row in rows), np.int64),
        distributes=_matrix([False] * width, (row.distributes for row in rows), np.bool_),
    )
    layout.distributes[0] = layout.distributes[1:].any(axis=0) if specs else False
    return layout


class QuotaRows(NamedTuple):
    """One quota's row of each static array."""

    spec_min: list[int]
    request_floor: list[int]
    cap: list[int]
    weight: list[int]
    distributes: list[bool]


#: Per quota name: the spec object and keys its rows were built for, and the rows.
RowMemo = dict[str, tuple[Quota, list[str], QuotaRows]]


def _remembered_rows(spec: Quota, keys: list[str], memo: RowMemo | None) -> QuotaRows:
    """The quota's rows: from ``memo`` when built for this very spec object and these keys."""
    if memo is None:
        return _quota_rows(spec, keys)
    remembered = memo.get(spec.name)
    if remembered is not None and remembered[0] is spec and remembered[1] == keys:
        return remembered[2]
    rows = _quota_rows(spec, keys)
    memo[spec.name] = (spec, keys, rows)
    return rows


def _quota_rows(spec: Quota, keys: list[str]) -> QuotaRows:
    """Everything the kernel needs to know about one quota, per resource (``request_floor`` and
    ``request_cap`` are only consulted where a lending or borrowing rule can change the value)."""
    minimum, maximum, weights = spec.min, spec.max, spec.effective_weight
    if spec.allow_lent and spec.lending_limit is None:
        floors = [0] * len(keys)
    else:
        floors = [clamp(request_floor(spec, key)) for key in keys]
    if spec.borrowing_limit is None:
        caps = [clamp(maximum.get(key, MAX_UNITS)) for key in keys]
    else:
        caps = [clamp(request_cap(spec, key)) for key in keys]
    return QuotaRows(
        spec_min=[clamp(minimum.get(key, 0)) for key in keys],
        request_floor=floors,
        cap=caps,
        weight=[clamp(weights.get(key, 0)) for key in keys],
        distributes=[key in maximum for key in keys],
    )


def _matrix(
    root: list[Any], rows: Iterable[list[Any]], dtype: type[np.int64] | type[np.bool_]
) -> npt.NDArray[Any]:
    """The virtual root's row then one row per quota, as one 2-d array (built in one call: setting
    elements one by one costs far more at 10,000 quotas)."""
    return np.array([root, *rows], dtype=dtype)


def _keys_of(spec: Quota) -> set[str]:
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


def request_floor(spec: Quota, key: str) -> int:
    """What a quota's request is raised to: its min when it does not lend, min - lending limit.

    ``allow-lent-resource: "false"`` is a lending limit of 0 on every resource.
    """
    minimum = spec.min.get(key, 0)
    if not spec.allow_lent:
        return minimum
    if spec.lending_limit is not None and key in spec.lending_limit:
        return max(0, minimum - spec.lending_limit[key])
    return 0


def request_cap(spec: Quota, key: str) -> int:
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
