"""Kernel output arrays turned back into named, keyed ``QuotaResult`` objects.

Which keys each list carries matters where the reference makes it matter: ``runtime`` has exactly
the keys the parent's level distributes (a missing key is not limited at admission); the computed
sums carry the quota's max keys plus any other non-zero entry; ``effectiveMin`` has the min's keys.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from elasticquota.core.accounting import Account, ExactSums
from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.layout import TreeLayout
from elasticquota.core.models import QuotaSpec
from elasticquota.core.resources import ResourceList, add
from elasticquota.core.results import QuotaResult
from elasticquota.core.topology import Topology
from elasticquota.kernels.arrays import SolveResult


def tree_results(
    layout: TreeLayout, topology: Topology, output: SolveResult
) -> dict[str, QuotaResult]:
    """One result per quota of the tree, and one for its virtual root."""
    columns = {name: np.asarray(array).tolist() for name, array in output._asdict().items()}
    keys = layout.keys
    results = {ROOT_QUOTA: _root_result(layout, columns)}
    for position, name in enumerate(layout.names[1:], start=1):
        spec = topology.quotas[name]
        tracked = set(spec.max)

        def sums(column: str, row: int = position, tracked: set[str] = tracked) -> ResourceList:
            return _keyed(keys, columns[column][row], tracked)

        present = columns["runtime_present"][position]
        results[name] = QuotaResult(
            name=name,
            namespace=spec.namespace,
            tree=layout.tree_id,
            parent=spec.parent,
            is_parent=spec.is_parent,
            min=dict(spec.min),
            max=dict(spec.max),
            effective_min={
                key: value
                for key, value in zip(keys, columns["effective_min"][position], strict=True)
                if key in spec.min
            },
            shared_weight=spec.effective_weight,
            request=sums("request"),
            child_request=sums("child_request"),
            limited_request=sums("limited_request"),
            used=sums("used"),
            runtime={
                key: value
                for key, value, has in zip(keys, columns["runtime"][position], present, strict=True)
                if has
            },
            non_preemptible_request=sums("np_request"),
            non_preemptible_used=sums("np_used"),
        )
    return results


def _keyed(keys: list[str], row: list[int], tracked: set[str]) -> ResourceList:
    """The tracked keys, plus any other key with a non-zero value."""
    return {key: value for key, value in zip(keys, row, strict=True) if key in tracked or value}


def _root_result(layout: TreeLayout, columns: Mapping[str, list[list[int]]]) -> QuotaResult:
    keys = layout.keys
    distributed = {
        key for key, has in zip(keys, layout.distributes[0].tolist(), strict=True) if has
    }

    def sums(column: str) -> ResourceList:
        return _keyed(keys, columns[column][0], distributed)

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
        request=sums("request"),
        child_request=sums("child_request"),
        limited_request=sums("limited_request"),
        used=sums("used"),
        runtime={
            key: value
            for key, value, has in zip(
                keys, columns["runtime"][0], columns["runtime_present"][0], strict=True
            )
            if has
        },
        non_preemptible_request=sums("np_request"),
        non_preemptible_used=sums("np_used"),
        reserved=True,
    )


def reserved_results(
    root: QuotaResult,
    specs: Mapping[str, QuotaSpec],
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
    results[ROOT_QUOTA] = QuotaResult(
        name=ROOT_QUOTA,
        namespace=specs[SYSTEM_QUOTA].namespace,
        tree=root.tree,
        parent="",
        is_parent=True,
        min={},
        max={},
        effective_min={},
        shared_weight={},
        request=request,
        child_request=root.child_request,
        limited_request=request,
        used=used,
        runtime=dict(total),
        non_preemptible_request=add(root.non_preemptible_request, np_request),
        non_preemptible_used=add(root.non_preemptible_used, np_used),
        reserved=True,
    )
    return results


def _tracked(sums: ExactSums, account: Account, row: int, spec: QuotaSpec) -> ResourceList:
    exact = sums.exact(account, row)
    return {key: value for key, value in exact.items() if key in spec.max or value}


def _reserved_result(spec: QuotaSpec, own: Mapping[Account, ResourceList]) -> QuotaResult:
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
