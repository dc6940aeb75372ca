"""What the quota engine tells its readers: its pods, nodes and trees, results, owners, problems.

``QuotaEngine`` (``engine``) changes the memory: events in, trees solved, topologies rebuilt. This
base class only reads it: which tree a quota or pod is in, which trees are out of date, what a
tree last published, the ``Snapshot`` of all of them, the name owners, the user limits and the
problems. Reads that need the current topology ask the engine to bring it up to date
(``_ensure_topology``); none of them changes what the engine holds otherwise.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType

from elasticquota.core.generic.cowmap import CowMap
from elasticquota.core.keys import DEFAULT_TREE, RESERVED_QUOTAS
from elasticquota.core.model.models import NodeInfo, PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.nodetotals import NodeTotals
from elasticquota.core.solve.placement import Placements
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.core.solve.totals import tree_problems
from elasticquota.core.solve.trees import TreeState
from elasticquota.core.tree.topology import Topology
from elasticquota.core.userlimits.tracker import UserLimitsView, UserLimitTracker


class EngineView(ABC):
    """The read side of ``QuotaEngine``: the state it holds, and every question asked of it."""

    _pods: CowMap[PodInfo]
    _unbound: CowMap[PodInfo]
    _nodes: NodeTotals
    _topology: Topology
    _trees: dict[str, TreeState]
    _placements: Placements
    _topology_dirty: bool
    #: Pods that changed while a topology change awaited its rebuild (not placed yet).
    _stale: set[str]
    #: Every tree's results in one mapping, as the last snapshot published them (None: stale).
    _quotas: Mapping[str, QuotaResult] | None
    _users: UserLimitTracker
    _limit_problems: list[Problem]

    @abstractmethod
    def _ensure_topology(self) -> None:
        """Rebuild the topology when a change made it stale (``QuotaEngine``)."""

    @property
    def pods(self) -> Mapping[str, PodInfo]:
        """The current pods by ``namespace/name`` (a live read-only view; it changes with events:
        what a ``Snapshot`` publishes does not)."""
        return self._pods

    def pods_labelled(self, quota: str) -> list[PodInfo] | None:
        """The pods whose quota label names ``quota``, by key, from the pod index: O(the pods
        counted in ``quota``), for a quota DELETE's webhook. A pod labelled with a quota pods can
        count in counts there, so it is among them; None (look at every pod) for any other name
        (of the topology the index was placed with). Never rebuilds: the webhooks read it on the
        event loop."""
        if quota not in self._placements.directory.quotas:
            return None
        placed = self._placements.index.by_quota.get(quota, ())
        if self._topology_dirty:
            return self._labelled_since_placed(quota, placed)
        return [pod for pod in placed if pod.quota_label == quota]

    def _labelled_since_placed(self, quota: str, placed: tuple[PodInfo, ...]) -> list[PodInfo]:
        """While a quota change awaits its rebuild: the pods the index last placed in ``quota``
        and those that changed since (``_stale``; a deleted pod left both), as they are now,
        those labelled with ``quota``: O(both), not every pod (a DELETE right after another
        quota change filtered 100,000 pods)."""
        keys = {pod.key for pod in placed}.union(self._stale)
        current = (self._pods.get(key) for key in keys)
        labelled = [pod for pod in current if pod is not None and pod.quota_label == quota]
        return sorted(labelled, key=_pod_key)

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The current nodes (read-only view; profiles select from them)."""
        return self._nodes.nodes

    @property
    def topology_stale(self) -> bool:
        """A quota (or the nodes' resources) changed since the last topology rebuild: the next
        ``tree_ids``, ``solve`` or ``latest`` rebuilds, unless ``prepare_rebuild`` does first."""
        return self._topology_dirty

    def tree_ids(self) -> list[str]:
        """Every tree, after bringing the topology up to date."""
        self._ensure_topology()
        return sorted(self._trees)

    def tree_of(self, quota: str) -> str | None:
        """The tree a valid quota belongs to (inherited from its parent when unlabelled)."""
        self._ensure_topology()
        return self._topology.tree_of.get(quota)

    def tree_of_result(self, name: str) -> str | None:
        """The tree whose results carry the quota object ``name``: the reserved quotas and the
        virtual root are written from the default tree's; None for a quota in no tree."""
        if name in RESERVED_QUOTAS:
            return DEFAULT_TREE
        return self.tree_of(name)

    def tree_of_pod(self, key: str) -> str | None:
        """The tree whose figures the pod counts in; None for a pod not placed (yet): unknown, or
        a quota change awaits the topology rebuild, after which every tree is solved anew."""
        if self._topology_dirty:
            return None
        return self._placements.tree_of_pod(key)

    def dirty_trees(self) -> list[str]:
        """Trees whose results are out of date (all of them after a topology change)."""
        return [tree_id for tree_id in self.tree_ids() if self._trees[tree_id].dirty]

    def unsettled_trees(self) -> list[str]:
        """Trees that are out of date or whose changed results the controller has not taken."""
        return [
            tree_id
            for tree_id in self.tree_ids()
            if self._trees[tree_id].dirty or self._trees[tree_id].changed
        ]

    def take_changed(self, tree_id: str) -> set[str]:
        """Names of the tree's quotas whose results, as of its last solve, differ from those at
        the last call for this tree: every name of a tree first solved after a topology change."""
        state = self._trees.get(tree_id)
        return state.take_changed() if state is not None else set()

    def take_moved(self, tree_id: str) -> set[str]:
        """``take_changed`` without its comparison: a superset (results that moved and moved back
        are in it), for a caller that compares them with what it saw itself, in slices."""
        state = self._trees.get(tree_id)
        return state.take_moved() if state is not None else set()

    def published(self, tree_id: str) -> Mapping[str, QuotaResult]:
        """The tree's results as last published, without solving (empty for an unknown tree)."""
        state = self._trees.get(tree_id)
        return state.results if state is not None else {}

    def _snapshot(self) -> Snapshot:
        """The published state: O(trees + buckets), whatever the number of pods."""
        pod_quota, pods_by_quota = self._placements.index.freeze()
        return Snapshot(
            quotas=self._all_results(),
            totals={tree_id: state.total for tree_id, state in self._trees.items()},
            pods=self._pods.freeze(),
            unbound=self._unbound.freeze(),
            pod_quota=pod_quota,
            pods_by_quota=pods_by_quota,
            problems=self.problems(),
            user_limits=self.user_limits(),
            over_used=frozenset().union(*(state.over_used for state in self._trees.values())),
        )

    def _all_results(self) -> Mapping[str, QuotaResult]:
        """Every tree's results in one mapping, merged again only when some changed."""
        if self._quotas is None:
            quotas: dict[str, QuotaResult] = {}
            for tree_id in sorted(self._trees, reverse=True):
                quotas.update(self._trees[tree_id].results)  # the default tree's root comes last
            self._quotas = quotas
        return self._quotas

    @property
    def name_owners(self) -> Mapping[str, Quota]:
        """The quota that owns each name, as of the last topology (read-only)."""
        return MappingProxyType(self._topology.owners)

    def name_owner(self, name: str) -> str | None:
        """``Topology.owner_namespace`` as of the last topology. Does not rebuild: the webhooks
        read it on the event loop."""
        return self._topology.owner_namespace(name)

    def unrecorded_owners(self) -> list[Quota]:
        """``Topology.unrecorded_owners``, after bringing the topology up to date."""
        self._ensure_topology()
        return self._topology.unrecorded_owners()

    def user_limits(self) -> UserLimitsView:
        """The user and group limits and usage as of now, frozen (O(buckets)); a pass's view
        after a topology change waits for the rebuild, as ``solve`` does."""
        self._ensure_topology()
        return self._users.freeze()

    def problems(self) -> list[Problem]:
        """Structural problems of the current quotas (after the last rebuild), and the user limit
        objects dropped for a rule they break (the quota itself is still computed)."""
        return [
            *self._topology.problems,
            *self._placements.directory.problems,
            *tree_problems(self._topology),
            *self._limit_problems,
        ]


def _pod_key(pod: PodInfo) -> str:
    return pod.key
