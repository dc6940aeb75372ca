"""Which quota a pod belongs to, and what it adds to that quota's own sums.

Resolution follows the reference: the pod's quota label; else a quota in the pod's namespace named
like the namespace; else a quota whose ``namespaces`` annotation lists the namespace; else the
default quota, which also catches pods whose quota is unknown or was left out of its tree.

Each quota's own sums (request, used and their non-preemptible parts, masked to the quota's max
keys) are kept exactly as Python ints, with an int64 mirror clamped for the kernel that changes row
by row: a pod event costs O(resources), never a rescan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.model.models import PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList, add, mask
from elasticquota.core.solve.layout import MAX_UNITS
from elasticquota.kernels.arrays import Int64Array


class Account(IntEnum):
    """The four sums kept per quota."""

    REQUEST = 0
    USED = 1
    NP_REQUEST = 2
    NP_USED = 3


#: One amount per account, in ``Account`` order.
Amounts = tuple[ResourceList, ResourceList, ResourceList, ResourceList]


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one pod adds to its quota's own sums."""

    quota: str
    amounts: Amounts


def contribution(pod: PodInfo, quota: str, spec_max: Mapping[str, int]) -> Contribution:
    """The pod's effective request, masked to the quota's max keys, in each account it counts in."""
    request = mask(pod.requests, spec_max)
    empty: ResourceList = {}
    non_preemptible = not pod.preemptible
    return Contribution(
        quota=quota,
        amounts=(
            request if pod.counts_in_request else empty,
            request if pod.is_assigned else empty,
            request if non_preemptible and pod.counts_in_request else empty,
            request if non_preemptible and pod.is_assigned else empty,
        ),
    )


def aggregate(pods: Iterable[PodInfo], spec_max: Mapping[str, int]) -> Amounts:
    """The sum of the contributions of many pods of one quota, in one pass over their requests.

    Exactly what applying each pod's ``contribution`` would add (integer sums do not depend on the
    order), without building one per pod: re-placing every pod after a topology change costs one
    dict update per pod and resource, and one ``ExactSums.apply`` per quota.
    """
    # Live pods by (bound to a node, non-preemptible); terminal pods count nowhere.
    classes: list[ResourceList] = [{}, {}, {}, {}]
    for pod in pods:
        if pod.is_terminal:
            continue
        target = classes[2 * bool(pod.node_name) + (not pod.preemptible)]
        for key, value in pod.requests.items():
            if key in spec_max:
                target[key] = target.get(key, 0) + value
    pending, pending_np, assigned, assigned_np = classes
    used = add(assigned, assigned_np)
    return (
        add(add(pending, pending_np), used),
        used,
        add(pending_np, assigned_np),
        assigned_np,
    )


@dataclass(slots=True)
class QuotaDirectory:
    """Pod -> quota resolution over the valid quotas (reserved ones included)."""

    quotas: Mapping[str, Quota]
    by_namespace_annotation: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def build(cls, quotas: Mapping[str, Quota]) -> QuotaDirectory:
        directory = cls(quotas=quotas)
        for name in sorted(quotas):
            for namespace in quotas[name].namespaces:
                owner = directory.by_namespace_annotation.setdefault(namespace, name)
                if owner != name:
                    directory.problems.append(
                        Problem(
                            quotas[name].ref,
                            f"namespace {namespace!r} in the namespaces annotation is already "
                            f"bound to quota {owner!r}; its pods go to {owner!r}",
                        )
                    )
        return directory

    def resolve(self, pod: PodInfo) -> str:
        """The quota the pod is accounted to."""
        if pod.quota_label:
            return pod.quota_label if pod.quota_label in self.quotas else DEFAULT_QUOTA
        same_name = self.quotas.get(pod.namespace)
        if same_name is not None and same_name.namespace == pod.namespace:
            return pod.namespace
        return self.by_namespace_annotation.get(pod.namespace, DEFAULT_QUOTA)


class ExactSums:
    """The four accounts of some quotas: exact rows and a clamped int64 mirror for the kernel."""

    def __init__(self, rows: int, keys: list[str]) -> None:
        self.keys = keys
        self._column = {key: column for column, key in enumerate(keys)}
        self._exact = [[[0] * len(keys) for _ in range(rows)] for _ in Account]
        self.mirror: list[Int64Array] = [
            np.zeros((rows, len(keys)), dtype=np.int64) for _ in Account
        ]

    def apply(self, row: int, amounts: Amounts, sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) one contribution on one row."""
        for account, amount in zip(Account, amounts, strict=True):
            if amount:
                self.mirror[account][row] = _clamped(self._add(account, row, amount, sign))

    def add_rows(self, rows: Iterable[tuple[int, Amounts]]) -> None:
        """Add one (aggregated) contribution to each of many distinct rows, then refresh those rows
        of the mirror with one numpy assignment per account: the bulk path of a rebuild."""
        touched = []
        for row, amounts in rows:
            touched.append(row)
            for account, amount in zip(Account, amounts, strict=True):
                self._add(account, row, amount, +1)
        if touched and self.keys:
            for account in Account:
                exact = self._exact[account]
                self.mirror[account][touched] = [_clamped(exact[row]) for row in touched]

    def _add(self, account: Account, row: int, amount: ResourceList, sign: int) -> list[int]:
        """``sign * amount`` added to one exact row (keys outside the layout ignored); the row."""
        exact = self._exact[account][row]
        for key, value in amount.items():
            column = self._column.get(key)
            if column is not None:
                exact[column] += sign * value
        return exact

    def exact(self, account: Account, row: int) -> ResourceList:
        """One row as an exact resource list (every key of the layout)."""
        return dict(zip(self.keys, self._exact[account][row], strict=True))


def _clamped(values: list[int]) -> list[int]:
    """Exact values as the kernel takes them: between 0 and ``MAX_UNITS``."""
    return [value if 0 <= value <= MAX_UNITS else min(max(value, 0), MAX_UNITS) for value in values]
