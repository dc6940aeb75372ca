"""Kernel output arrays turned back into named, keyed ``QuotaResult`` objects.

Which keys each list carries matters where the reference makes it matter: ``runtime`` has exactly
the keys the parent's level distributes (a missing key is not limited at admission); the computed
sums carry the quota's max keys plus any other non-zero entry; ``effectiveMin`` has the min's keys.

Equal lists are one object: a solve of a 10,000-quota tree makes some 70,000 figure lists, of
which a few hundred differ (most rows are zeros, or a quota's max again), and results are never
changed in place. Each solve keeps a memo of the lists it built, keyed by the row's values and
the keys it keeps (``_Lists``): a row seen before costs a lookup, not a new dict (at 100,000
pods the results were 35 MiB of the operator's live memory, and the collector scanned them all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypedDict

import numpy as np

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList, add
from elasticquota.core.solve.accounting import Account, ExactSums
from elasticquota.core.solve.layout import TreeLayout
from elasticquota.core.solve.results import QuotaResult
from elasticquota.core.tree.topology import Topology
from elasticquota.kernels.arrays import SolveResult


def changed_rows(output: SolveResult, previous: SolveResult | None) -> list[int]:
    """Rows whose kernel outputs differ from ``previous`` in any array (every row when there is no
    comparable previous output); row 0, the virtual root, always (the default tree's reserved
    results are built on it)."""
    rows = output.runtime.shape[0]
    if previous is None or previous.runtime.shape != output.runtime.shape:
        return list(range(rows))
    differs = np.zeros(rows, dtype=np.bool_)
    for new, old in zip(output, previous, strict=True):
        differs |= (np.asarray(new) != np.asarray(old)).any(axis=1)
    differs[0] = True
    return [int(row) for row in np.flatnonzero(differs)]


def tree_results(
    layout: TreeLayout,
    topology: Topology,
    output: SolveResult,
    previous: SolveResult | None = None,
) -> dict[str, QuotaResult]:
    """The results of the rows whose outputs differ from ``previous`` (the tree's last output):
    one per quota of the tree and one for its virtual root when there is none. A row whose
    outputs did not change would give a result equal to its last one; it is not built again.
    """
    changed = changed_rows(output, previous)
    outputs = [(name, np.asarray(array)) for name, array in output._asdict().items()]
    lists = _Lists(layout.keys)
    results = {}
    for start in range(0, len(changed), ROWS_AT_ONCE):
        rows = changed[start : start + ROWS_AT_ONCE]
        columns = {name: array[rows].tolist() for name, array in outputs}
        for at, position in enumerate(rows):
            if position == 0:
                results[ROOT_QUOTA] = _root_result(layout, columns, at, lists)
            else:
                name = layout.names[position]
                spec = topology.quotas[name]
                results[name] = _quota_result(layout, spec, columns, at, lists)
    return results


#: Rows of the kernel's outputs turned into Python lists at once: a whole 10,000-row tree at once
#: made 110,000 lists alive together (a transient 10 MB, and as many objects for the collector
#: to scan while the results were built), for no gain in speed.
ROWS_AT_ONCE = 512


class _Lists:
    """One solve's memo of the resource lists it built: equal rows kept under equal keys give
    the same dict (never changed afterwards: results are read-only)."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self._built: dict[tuple[object, ...], ResourceList] = {}

    def sums(self, row: list[int], tracked: frozenset[str]) -> ResourceList:
        """The ``tracked`` keys, plus any other key with a non-zero value."""
        memo = ("sums", tracked, *row)
        built = self._built.get(memo)
        if built is None:
            built = self._built[memo] = {
                key: value
                for key, value in zip(self.keys, row, strict=True)
                if key in tracked or value
            }
        return built

    def kept(self, row: list[int], kept: frozenset[str]) -> ResourceList:
        """The ``kept`` keys only."""
        memo = ("kept", kept, *row)
        built = self._built.get(memo)
        if built is None:
            built = self._built[memo] = {
                key: value for key, value in zip(self.keys, row, strict=True) if key in kept
            }
        return built

    def present(self, row: list[int], present: list[int]) -> ResourceList:
        """The keys whose ``present`` flag is set."""
        memo = ("present", *row, *present)
        built = self._built.get(memo)
        if built is None:
            built = self._built[memo] = {
                key: value for key, value, has in zip(self.keys, row, present, strict=True) if has
            }
        return built


def _quota_result(
    layout: TreeLayout,
    spec: Quota,
    columns: Mapping[str, list[list[int]]],
    at: int,
    lists: _Lists,
) -> QuotaResult:
    """One quota's result from its row (``at`` in ``columns``); its min, max, weight and limits
    are the spec's own lists (none is ever changed in place)."""
    return QuotaResult(
        name=spec.name,
        namespace=spec.namespace,
        tree=layout.tree_id,
        parent=spec.parent,
        is_parent=spec.is_parent,
        min=spec.min,
        max=spec.max,
        effective_min=lists.kept(columns["effective_min"][at], frozenset(spec.min)),
        shared_weight=spec.effective_weight,
        **_figures(columns, at, frozenset(spec.max), lists),
        lending_limit=spec.lending_limit,
        borrowing_limit=spec.borrowing_limit,
    )


class _Figures(TypedDict):
    """What the solve computed for one row of a tree, as ``QuotaResult`` fields."""

    request: ResourceList
    child_request: ResourceList
    limited_request: ResourceList
    used: ResourceList
    runtime: ResourceList
    non_preemptible_request: ResourceList
    non_preemptible_used: ResourceList


def _figures(
    columns: Mapping[str, list[list[int]]], at: int, tracked: frozenset[str], lists: _Lists
) -> _Figures:
    """Row ``at``'s sums (the ``tracked`` keys, plus any other key with a non-zero value) and its
    runtime (the keys it is present for)."""

    def sums(column: str) -> ResourceList:
        return lists.sums(columns[column][at], tracked)

    return _Figures(
        request=sums("request"),
        child_request=sums("child_request"),
        limited_request=sums("limited_request"),
        used=sums("used"),
        runtime=lists.present(columns["runtime"][at], columns["runtime_present"][at]),
        non_preemptible_request=sums("np_request"),
        non_preemptible_used=sums("np_used"),
    )


def _root_result(
    layout: TreeLayout, columns: Mapping[str, list[list[int]]], at: int, lists: _Lists
) -> QuotaResult:
    """The virtual root's result from row 0 (``at`` in ``columns``)."""
    keys = layout.keys
    distributed = frozenset(
        key for key, has in zip(keys, layout.distributes[0].tolist(), strict=True) if has
    )
    return QuotaResult(
        name=ROOT_QUOTA,
        namespace="",
        tree=layout.tree_id,
        parent="",
        is_parent=True,
        min={},
        max={},
        effective_min={},
        shared_weight={},
        **_figures(columns, at, distributed, lists),
        reserved=True,
    )


def reserved_results(
    root: QuotaResult,
    specs: Mapping[str, Quota],
    sums: ExactSums,
    total: ResourceList,
) -> dict[str, QuotaResult]:
    """The system and default quotas, and the root with their requests and usage added.

    They take no part in the water-fill (a documented deviation: in the reference they can enter the
    root level as borrowers with a huge weight). Their runtime is their max; what they use is taken
    out of the default tree's total instead.
    """
    results: dict[str, QuotaResult] = {}
    request, used = root.request, root.used
    np_request: ResourceList = {}
    np_used: ResourceList = {}
    for row, name in enumerate((SYSTEM_QUOTA, DEFAULT_QUOTA)):
        spec = specs[name]
        own = {account: _tracked(sums, account, row, spec) for account in Account}
        results[name] = _reserved_result(spec, own)
        request = add(request, own[Account.REQUEST])
        used = add(used, own[Account.USED])
        np_request = add(np_request, own[Account.NP_REQUEST])
        np_used = add(np_used, own[Account.NP_USED])
    results[ROOT_QUOTA] = replace(
        root,
        namespace=specs[SYSTEM_QUOTA].namespace,
        request=request,
        limited_request=request,
        used=used,
        runtime=dict(total),
        non_preemptible_request=add(root.non_preemptible_request, np_request),
        non_preemptible_used=add(root.non_preemptible_used, np_used),
    )
    return results


def _tracked(sums: ExactSums, account: Account, row: int, spec: Quota) -> ResourceList:
    exact = sums.exact(account, row)
    return {key: value for key, value in exact.items() if key in spec.max or value}


def _reserved_result(spec: Quota, own: Mapping[Account, ResourceList]) -> QuotaResult:
    request = own[Account.REQUEST]
    return QuotaResult(
        name=spec.name,
        namespace=spec.namespace,
        tree="",
        parent=ROOT_QUOTA,
        is_parent=False,
        min=dict(spec.min),
        max=dict(spec.max),
        effective_min=dict(spec.min),
        shared_weight=spec.effective_weight,
        request=request,
        child_request=request,
        limited_request={
            key: min(value, spec.max[key]) if key in spec.max else value
            for key, value in request.items()
        },
        used=own[Account.USED],
        runtime=dict(spec.max),
        non_preemptible_request=own[Account.NP_REQUEST],
        non_preemptible_used=own[Account.NP_USED],
        reserved=True,
    )
