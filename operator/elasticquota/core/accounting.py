"""Which quota a pod belongs to, and what it adds to that quota's own sums.

Resolution follows the reference: the pod's quota label; else a quota in the pod's namespace named
like the namespace; else a quota whose ``namespaces`` annotation lists the namespace; else the
default quota, which also catches pods whose quota is unknown or was left out of its tree.

Each quota's own sums (request, used and their non-preemptible parts, masked to the quota's max
keys) are kept exactly as Python ints, with an int64 mirror clamped for the kernel that changes row
by row: a pod event costs O(resources), never a rescan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.layout import MAX_UNITS, Int64Array
from elasticquota.core.models import PodInfo, Problem, QuotaSpec
from elasticquota.core.resources import ResourceList, mask


class Account(IntEnum):
    """The four sums kept per quota."""

    REQUEST = 0
    USED = 1
    NP_REQUEST = 2
    NP_USED = 3


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one pod adds to its quota's own sums."""

    quota: str
    amounts: tuple[ResourceList, ResourceList, ResourceList, ResourceList]


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


@dataclass(slots=True)
class QuotaDirectory:
    """Pod -> quota resolution over the valid quotas (reserved ones included)."""

    quotas: Mapping[str, QuotaSpec]
    by_namespace_annotation: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def build(cls, quotas: Mapping[str, QuotaSpec]) -> QuotaDirectory:
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

    def apply(self, row: int, amounts: tuple[ResourceList, ...], sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) one contribution on one row."""
        for account, amount in zip(Account, amounts, strict=True):
            if not amount:
                continue
            exact = self._exact[account][row]
            for key, value in amount.items():
                column = self._column.get(key)
                if column is not None:
                    exact[column] += sign * value
            self.mirror[account][row] = [min(max(value, 0), MAX_UNITS) for value in exact]

    def exact(self, account: Account, row: int) -> ResourceList:
        """One row as an exact resource list (every key of the layout)."""
        return dict(zip(self.keys, self._exact[account][row], strict=True))
