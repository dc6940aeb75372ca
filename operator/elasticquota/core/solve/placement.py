"""Pods placed in their quotas' sums: one pod at a time on events, all of them after a rebuild.

A ``Placements`` belongs to one topology. Between two topology changes a pod event removes the pod's
old contribution and adds its new one, O(resources), and keeps the ``PodIndex`` that snapshots
publish up to date. The contribution of a placed pod is not stored: it is computed again from the
pod when it leaves, with the same quota max (the topology has not changed meanwhile).

A topology change carries the index over (``count_after``): every pod is resolved again and only
those whose quota changed (or that changed while the rebuild was pending) move. The new sums are
then filled once per quota with the sum of its pods' contributions (``aggregate``), remembered with
the pods tuple it was computed from: a quota whose pods tuple and max keys are the same objects and
keys as at the last rebuild reuses it. Re-placing 100,000 pods costs one resolution per pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from elasticquota.core.keys import DEFAULT_QUOTA, DEFAULT_TREE, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.accounting import (
    Amounts,
    ExactSums,
    QuotaDirectory,
    aggregate,
    contribution,
)
from elasticquota.core.solve.podindex import PodIndex
from elasticquota.core.solve.trees import TreeState, touch_tree

#: The reserved quotas' rows in the reserved sums.
RESERVED_ROWS = {SYSTEM_QUOTA: 0, DEFAULT_QUOTA: 1}

#: Per quota: the pods tuple and max keys an aggregate was computed from, and the aggregate.
AggregateMemo = dict[str, tuple[tuple[PodInfo, ...], frozenset[str], Amounts]]


class Placements:
    """Every pod's share of its quota's sums, for one topology."""

    def __init__(
        self,
        directory: QuotaDirectory,
        tree_of: Mapping[str, str],
        trees: Mapping[str, TreeState],
        reserved: ExactSums,
        index: PodIndex | None = None,
    ) -> None:
        self.directory = directory
        self._tree_of = tree_of
        self._trees = trees
        #: The system and default quotas' sums (rows ``RESERVED_ROWS``).
        self.reserved = reserved
        self.index = index or PodIndex()
        self._memo: AggregateMemo = {}
        #: What the rebuild that made these placements moved: quota -> keys of the pods that left
        #: it, quota -> the pods that (re-)entered it (``count_after``; empty otherwise).
        self.left: dict[str, set[str]] = {}
        self.arrived: dict[str, list[PodInfo]] = {}

    def place(self, pod: PodInfo) -> None:
        """Count one pod (not placed yet) in its quota."""
        quota = self.directory.resolve(pod)
        self._apply(quota, contribution(pod, quota, self.directory.quotas[quota].max).amounts, +1)
        self.index.add(pod, quota)

    def unplace(self, pod: PodInfo) -> None:
        """Stop counting ``pod`` (the object that was placed); nothing if it was not placed."""
        quota = self.index.remove(pod.key)
        if quota is not None:
            amounts = contribution(pod, quota, self.directory.quotas[quota].max).amounts
            self._apply(quota, amounts, -1)

    def count_after(
        self, previous: Placements, pods: Mapping[str, PodInfo], stale: Set[str]
    ) -> None:
        """Count every pod in these placements of a new topology, made with the index of the
        ``previous`` ones (or a fork of it: a rebuild runs while events keep changing theirs),
        reading their aggregate memo.

        ``pods``: every current pod; ``stale``: keys of pods that changed or arrived since the
        index was last brought up to date (it still holds their previous object, or nothing).
        """
        self._reindex(pods, stale)
        self._count_all(previous._memo)

    def tree_of_pod(self, key: str) -> str | None:
        """The tree whose figures the pod counts in; None for a pod not placed."""
        quota = self.index.quota_of.get(key)
        if quota is None:
            return None
        if quota in RESERVED_ROWS:
            return DEFAULT_TREE
        return self._tree_of[quota]

    def _reindex(self, pods: Mapping[str, PodInfo], stale: Set[str]) -> None:
        """Move the pods whose quota is not the indexed one (or that are stale), all at once."""
        resolve = self.directory.resolve
        indexed = self.index.quota_of
        leaving: dict[str, set[str]] = {}
        arriving: dict[str, list[PodInfo]] = {}
        for key, pod in pods.items():
            quota = resolve(pod)
            before = indexed.get(key)
            if before != quota or key in stale:
                if before is not None:
                    leaving.setdefault(before, set()).add(key)
                arriving.setdefault(quota, []).append(pod)
        self.index.move(leaving, arriving)
        self.left, self.arrived = leaving, arriving

    def _count_all(self, memo: AggregateMemo) -> None:
        """Fill the fresh sums: one aggregate per quota with pods, written to each tree in bulk."""
        rows: dict[str, list[tuple[int, Amounts]]] = {}
        for quota, pods in self.index.by_quota.items():
            amounts = self._aggregate(quota, pods, memo)
            row = RESERVED_ROWS.get(quota)
            if row is not None:
                self.reserved.apply(row, amounts, +1)
                touch_tree(self._trees, DEFAULT_TREE)
            else:
                tree_id = self._tree_of[quota]
                index = self._trees[tree_id].layout.index[quota]
                rows.setdefault(tree_id, []).append((index, amounts))
        for tree_id, tree_rows in rows.items():
            self._trees[tree_id].sums.add_rows(tree_rows)
            self._trees[tree_id].touch()

    def _aggregate(self, quota: str, pods: tuple[PodInfo, ...], memo: AggregateMemo) -> Amounts:
        """The quota's aggregate: the remembered one when its pods and max keys are unchanged."""
        spec_max = self.directory.quotas[quota].max
        remembered = memo.get(quota)
        if remembered is not None and remembered[0] is pods and remembered[1] == spec_max.keys():
            amounts = remembered[2]
            keys = remembered[1]
        else:
            amounts = aggregate(pods, spec_max)
            keys = frozenset(spec_max)
        self._memo[quota] = (pods, keys, amounts)
        return amounts

    def _apply(self, quota: str, amounts: Amounts, sign: int) -> None:
        """Add (+1) or remove (-1) amounts on the quota's row and mark its tree out of date."""
        row = RESERVED_ROWS.get(quota)
        if row is not None:
            self.reserved.apply(row, amounts, sign)
            touch_tree(self._trees, DEFAULT_TREE)
            return
        tree_id = self._tree_of[quota]
        state = self._trees[tree_id]
        state.sums.apply(state.layout.index[quota], amounts, sign)
        state.touch()
