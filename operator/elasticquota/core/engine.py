"""The quota engine: objects in, every group's request, used and runtime out.

Events (quota, pod and node upserts and deletes) only update memory and mark trees dirty.
``solve()`` recomputes each dirty tree from scratch in one kernel call: no lazily refreshed
per-parent state can drift, and the same inputs always give the same snapshot. A quota change
rebuilds the topology (it can move quotas and pods between trees); a pod change touches one row of
its quota's sums.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from elasticquota.core.accounting import (
    Account,
    Contribution,
    ExactSums,
    QuotaDirectory,
    contribution,
)
from elasticquota.core.keys import (
    DEFAULT_QUOTA,
    DEFAULT_RESERVED_NAMESPACE,
    DEFAULT_TREE,
    RESERVED_GROUP_MAX,
    ROOT_QUOTA,
    SYSTEM_QUOTA,
)
from elasticquota.core.layout import TreeLayout, build_layout, total_row
from elasticquota.core.models import NodeInfo, PodInfo, Problem, QuotaSpec
from elasticquota.core.resources import ResourceList, add, mask, subtract_clamped
from elasticquota.core.results import QuotaResult, Snapshot
from elasticquota.core.topology import Topology, build_topology
from elasticquota.core.treeresults import reserved_results, tree_results
from elasticquota.kernels.arrays import SolveResult, TreeArrays
from elasticquota.kernels.waterfill import solve_tree

#: The kernel, or its plain-Python twin (tests run both).
Solver = Callable[[TreeArrays, bool], SolveResult]


def reference_reserved_max() -> ResourceList:
    """The reference's default max of the system and default quotas (cpu in cores)."""
    return {"cpu": RESERVED_GROUP_MAX * 1000, "memory": RESERVED_GROUP_MAX}


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Knobs of the computation (the reference's plugin arguments that affect it)."""

    scale_min_quota: bool = True
    reserved_namespace: str = DEFAULT_RESERVED_NAMESPACE
    system_quota_max: ResourceList = field(default_factory=reference_reserved_max)
    default_quota_max: ResourceList = field(default_factory=reference_reserved_max)


@dataclass(slots=True)
class TreeState:
    """One tree's manager state: its static layout, its pod sums and its last result."""

    layout: TreeLayout
    sums: ExactSums
    dirty: bool = True
    results: dict[str, QuotaResult] = field(default_factory=dict)
    total: ResourceList = field(default_factory=dict)


def _root_total(spec: QuotaSpec) -> ResourceList | None:
    """A profile tree root's ``total-resource``: only read on a quota labelled is-root=true."""
    return spec.total_resource if spec.is_root else None


def _take_out(total: ResourceList, amount: ResourceList) -> ResourceList:
    """``total - amount`` clamped at 0, on the keys of ``total`` only: subtracting never makes a
    resource that no node has present in the total (it would then be scaled as a total of 0)."""
    return subtract_clamped(total, mask(amount, total))


class QuotaEngine:
    """One manager per quota tree, fed by object events, solved on demand."""

    def __init__(self, settings: EngineSettings | None = None, solver: Solver = solve_tree) -> None:
        self.settings = settings or EngineSettings()
        self._solver = solver
        self._specs: dict[tuple[str, str], QuotaSpec] = {}
        self._pods: dict[str, PodInfo] = {}
        self._nodes: dict[str, NodeInfo] = {}
        self._node_total: ResourceList = {}
        #: How many nodes have each resource: a resource no node has is absent from the total.
        self._nodes_with: dict[str, int] = {}
        self._placements: dict[str, Contribution] = {}
        self._topology = Topology()
        self._directory = QuotaDirectory(quotas={})
        self._trees: dict[str, TreeState] = {}
        self._reserved_specs: dict[str, QuotaSpec] = {}
        self._reserved_sums = ExactSums(0, [])
        self._topology_dirty = True

    # -- events -------------------------------------------------------------------------------

    def upsert_quota(self, spec: QuotaSpec) -> None:
        """Add or replace a quota; an identical spec (only our annotations moved) is a no-op."""
        key = (spec.namespace, spec.name)
        if self._specs.get(key) == spec:
            return
        self._specs[key] = spec
        self._topology_dirty = True

    def delete_quota(self, namespace: str, name: str) -> None:
        if self._specs.pop((namespace, name), None) is not None:
            self._topology_dirty = True

    def upsert_pod(self, pod: PodInfo) -> None:
        """Add or replace a pod; an identical one (e.g. only its conditions moved) is a no-op."""
        if self._pods.get(pod.key) == pod:
            return
        self._unplace(pod.key)
        self._pods[pod.key] = pod
        if not self._topology_dirty:
            self._place(pod)

    def delete_pod(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        self._unplace(key)
        self._pods.pop(key, None)

    def upsert_node(self, node: NodeInfo) -> None:
        old = self._nodes.get(node.name)
        if old is not None:
            self._count_node(old, -1)
        self._nodes[node.name] = node
        self._count_node(node, +1)
        self._mark_dirty(DEFAULT_TREE)

    def delete_node(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is not None:
            self._count_node(old, -1)
            self._mark_dirty(DEFAULT_TREE)

    def _count_node(self, node: NodeInfo, sign: int) -> None:
        """Add (+1) or remove (-1) a node's allocatable: the total stays the exact sum over the
        current nodes, with exactly their keys (as if they had been loaded into a fresh engine)."""
        for name, value in node.allocatable.items():
            self._node_total[name] = self._node_total.get(name, 0) + sign * value
            self._nodes_with[name] = self._nodes_with.get(name, 0) + sign
            if self._nodes_with[name] == 0:
                del self._nodes_with[name]
                del self._node_total[name]

    def load(
        self,
        quotas: Iterable[QuotaSpec] = (),
        pods: Iterable[PodInfo] = (),
        nodes: Iterable[NodeInfo] = (),
    ) -> QuotaEngine:
        """Add many objects at once (a convenience for tests and ``plan``)."""
        for spec in quotas:
            self.upsert_quota(spec)
        for node in nodes:
            self.upsert_node(node)
        for pod in pods:
            self.upsert_pod(pod)
        return self

    @property
    def pods(self) -> Mapping[str, PodInfo]:
        """The current pods by ``namespace/name`` (read-only view)."""
        return MappingProxyType(self._pods)

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The current nodes (read-only view; profiles select from them)."""
        return MappingProxyType(self._nodes)

    # -- solving ------------------------------------------------------------------------------

    def tree_ids(self) -> list[str]:
        """Every tree, after bringing the topology up to date."""
        if self._topology_dirty:
            self._rebuild()
        return sorted(self._trees)

    def tree_of(self, quota: str) -> str | None:
        """The tree a valid quota belongs to (inherited from its parent when unlabelled)."""
        if self._topology_dirty:
            self._rebuild()
        return self._topology.tree_of.get(quota)

    def tree_of_pod(self, key: str) -> str | None:
        """The tree whose figures the pod counts in; None for a pod not placed (yet): unknown, or
        a quota change awaits the topology rebuild, after which every tree is solved anew."""
        placed = None if self._topology_dirty else self._placements.get(key)
        if placed is None:
            return None
        if placed.quota in (SYSTEM_QUOTA, DEFAULT_QUOTA):
            return DEFAULT_TREE
        return self._topology.tree_of[placed.quota]

    def dirty_trees(self) -> list[str]:
        """Trees whose results are out of date (all of them after a topology change)."""
        return [tree_id for tree_id in self.tree_ids() if self._trees[tree_id].dirty]

    def solve_tree(self, tree_id: str) -> Mapping[str, QuotaResult]:
        """One tree's results (recomputed if dirty); empty for a tree that no longer exists."""
        if self._topology_dirty:
            self._rebuild()
        state = self._trees.get(tree_id)
        if state is None:
            return {}
        if state.dirty:
            self._solve_tree(tree_id, state)
        return state.results

    def tree_total(self, tree_id: str) -> ResourceList:
        """What the tree's virtual root distributed at its last solve."""
        state = self._trees.get(tree_id)
        return dict(state.total) if state is not None else {}

    def solve(self) -> Snapshot:
        """Recompute every dirty tree and return the state of all of them."""
        if self._topology_dirty:
            self._rebuild()
        # Trees are independent once the topology is built (the default tree's total depends on
        # the profile roots' specs, not on their results), so any order gives the same snapshot.
        for tree_id in sorted(self._trees):
            state = self._trees[tree_id]
            if state.dirty:
                self._solve_tree(tree_id, state)
        return self._snapshot()

    def _solve_tree(self, tree_id: str, state: TreeState) -> None:
        layout = state.layout
        state.total = self._tree_total(tree_id)
        total, present = total_row(layout, state.total)
        mirror = state.sums.mirror
        output = self._solver(
            TreeArrays(
                layout.child_start,
                mirror[Account.REQUEST],
                mirror[Account.USED],
                mirror[Account.NP_REQUEST],
                mirror[Account.NP_USED],
                layout.spec_min,
                layout.request_floor,
                layout.cap,
                layout.weight,
                layout.distributes,
                total,
                present,
            ),
            self.settings.scale_min_quota,
        )
        state.results = tree_results(layout, self._topology, output)
        if tree_id == DEFAULT_TREE:
            state.results.update(
                reserved_results(
                    state.results[ROOT_QUOTA],
                    self._reserved_specs,
                    self._reserved_sums,
                    state.total,
                )
            )
        state.dirty = False

    def _tree_total(self, tree_id: str) -> ResourceList:
        """What a tree's virtual root distributes.

        A profile tree: its root quota's ``total-resource``. The default tree: all nodes'
        allocatable, minus the profile trees' totals (unless their root ignores the default tree),
        minus what the system and default quotas use.
        """
        if tree_id != DEFAULT_TREE:
            return self._profile_total(tree_id)
        total = dict(self._node_total)
        for other in self._topology.top_level:
            if other == DEFAULT_TREE:
                continue
            for name in self._topology.top_level[other]:
                spec = self._topology.quotas[name]
                root_total = _root_total(spec)
                if root_total is not None and not spec.ignore_default_tree:
                    total = _take_out(total, root_total)
        for row, _name in enumerate((SYSTEM_QUOTA, DEFAULT_QUOTA)):
            total = _take_out(total, self._reserved_sums.exact(Account.USED, row))
        return total

    def _profile_total(self, tree_id: str) -> ResourceList:
        total: ResourceList = {}
        for name in self._topology.top_level.get(tree_id, []):
            root_total = _root_total(self._topology.quotas[name])
            if root_total is not None:
                total = add(total, root_total)
        return total

    # -- topology and pod placement -----------------------------------------------------------

    def _rebuild(self) -> None:
        """New topology: rebuild every tree's layout and re-place every pod."""
        self._topology = build_topology(self._specs.values())
        self._reserved_specs = self._reserved_quota_specs()
        self._directory = QuotaDirectory.build({**self._topology.quotas, **self._reserved_specs})
        self._trees = {}
        for tree_id in self._topology.trees():
            extra = set(self._node_total) if tree_id == DEFAULT_TREE else set()
            extra |= set(self._profile_total(tree_id))
            layout = build_layout(self._topology, tree_id, frozenset(extra))
            self._trees[tree_id] = TreeState(layout, ExactSums(layout.size, layout.keys))
        reserved_keys = sorted(
            set(self._reserved_specs[SYSTEM_QUOTA].max)
            | set(self._reserved_specs[DEFAULT_QUOTA].max)
        )
        self._reserved_sums = ExactSums(2, reserved_keys)
        self._placements = {}
        self._topology_dirty = False
        for pod in self._pods.values():
            self._place(pod)

    def _reserved_quota_specs(self) -> dict[str, QuotaSpec]:
        """The system and default quotas: as given, or created with the reference defaults."""
        specs: dict[str, QuotaSpec] = {}
        for name, default_max in (
            (SYSTEM_QUOTA, self.settings.system_quota_max),
            (DEFAULT_QUOTA, self.settings.default_quota_max),
        ):
            given = self._topology.reserved.get(name)
            specs[name] = given or QuotaSpec(
                name=name, namespace=self.settings.reserved_namespace, max=dict(default_max)
            )
        return specs

    def _place(self, pod: PodInfo) -> None:
        quota = self._directory.resolve(pod)
        spec = self._directory.quotas[quota]
        placed = contribution(pod, quota, spec.max)
        self._apply(placed, +1)
        self._placements[pod.key] = placed

    def _unplace(self, key: str) -> None:
        placed = self._placements.pop(key, None)
        if placed is not None:
            self._apply(placed, -1)

    def _apply(self, placed: Contribution, sign: int) -> None:
        if placed.quota in (SYSTEM_QUOTA, DEFAULT_QUOTA):
            row = 0 if placed.quota == SYSTEM_QUOTA else 1
            self._reserved_sums.apply(row, placed.amounts, sign)
            self._mark_dirty(DEFAULT_TREE)
            return
        tree_id = self._topology.tree_of[placed.quota]
        state = self._trees[tree_id]
        state.sums.apply(state.layout.index[placed.quota], placed.amounts, sign)
        state.dirty = True

    def _mark_dirty(self, tree_id: str) -> None:
        state = self._trees.get(tree_id)
        if state is not None:
            state.dirty = True

    # -- output -------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        quotas: dict[str, QuotaResult] = {}
        for tree_id in sorted(self._trees, reverse=True):
            quotas.update(self._trees[tree_id].results)  # the default tree's root comes last
        pod_quota = {key: placed.quota for key, placed in self._placements.items()}
        by_quota: dict[str, list[PodInfo]] = {}
        for key in sorted(pod_quota):
            by_quota.setdefault(pod_quota[key], []).append(self._pods[key])
        return Snapshot(
            quotas=quotas,
            totals={tree_id: state.total for tree_id, state in self._trees.items()},
            pods=dict(self._pods),
            pod_quota=pod_quota,
            pods_by_quota=by_quota,
            problems=self.problems(),
        )

    def problems(self) -> list[Problem]:
        """Structural problems of the current quotas (after the last rebuild)."""
        return [*self._topology.problems, *self._directory.problems, *self._tree_problems()]

    def _tree_problems(self) -> list[Problem]:
        problems = []
        for tree_id, names in self._topology.top_level.items():
            if tree_id == DEFAULT_TREE:
                continue
            if not any(_root_total(self._topology.quotas[name]) is not None for name in names):
                spec = self._topology.quotas[names[0]]
                problems.append(
                    Problem(
                        spec.ref,
                        f"tree {tree_id!r} has no root quota (is-root=true) with a "
                        "total-resource annotation (is the ElasticQuotaProfile missing?); "
                        "the tree's total is empty",
                    )
                )
        return problems
