"""The quota engine: objects in, every group's request, used and runtime out.

Events (quota, pod and node upserts and deletes) only update memory and mark trees dirty.
``solve()`` recomputes each dirty tree in one kernel call over its exact sums: no lazily refreshed
per-parent state can drift, and the same inputs always give the same snapshot. A quota change
rebuilds the topology (it can move quotas and pods between trees) and re-places every pod at once;
a pod change touches one row of its quota's sums and one entry of the pod index.

What the controller reads is kept incrementally so that a pass after a few changes costs O(changes)
plus the dirty trees' kernel calls: only the results of rows whose outputs moved are rebuilt, the
names whose results changed are kept for ``take_changed``, and a ``Snapshot`` publishes the pods
and their index by freezing copy-on-write maps instead of copying and sorting every pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from elasticquota.core.generic.cowmap import CowMap
from elasticquota.core.keys import (
    DEFAULT_TREE,
)
from elasticquota.core.model.models import NodeInfo, PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.accounting import ExactSums, QuotaDirectory
from elasticquota.core.solve.enginesettings import EngineSettings, reference_reserved_max
from elasticquota.core.solve.engineview import EngineView
from elasticquota.core.solve.layout import RowMemo
from elasticquota.core.solve.nodetotals import NodeTotals
from elasticquota.core.solve.placement import Placements
from elasticquota.core.solve.quotaspecs import QuotaSpecs
from elasticquota.core.solve.rebuild import (
    RebuildJob,
    RebuildOutcome,
    ReservedDefaults,
    compute_rebuild,
    replay,
)
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.core.solve.solvejob import SolveJob, SolveOutcome, Solver, compute, tree_arrays
from elasticquota.core.solve.totals import tree_total
from elasticquota.core.solve.treeresults import reserved_results
from elasticquota.core.solve.trees import TreeState, touch_tree
from elasticquota.core.tree.topology import Topology
from elasticquota.core.userlimits.tracker import LimitMemo, UserLimitTracker
from elasticquota.kernels.waterfill import solve_tree

__all__ = ["EngineSettings", "QuotaEngine", "Solver", "reference_reserved_max"]


class QuotaEngine(EngineView):
    """One manager per quota tree, fed by object events, solved on demand; what it tells its
    readers is ``EngineView``'s."""

    def __init__(
        self,
        settings: EngineSettings | None = None,
        solver: Solver = solve_tree,
        name_owners: Mapping[str, Quota] | None = None,
    ) -> None:
        """``name_owners``: who owned each quota name (another engine's ``name_owners``): those
        quotas keep their names here too, as they would in that engine."""
        self.settings = settings or EngineSettings()
        self._solver = solver
        self._quota_specs = QuotaSpecs()
        self._pods: CowMap[PodInfo] = CowMap()
        #: The pods not bound to a node: the gate's every round reads these only (a few in a
        #: cluster of 100,000 pods, walked in 50 ms).
        self._unbound: CowMap[PodInfo] = CowMap()
        self._nodes = NodeTotals()
        self._topology = Topology(owners=dict(name_owners or {}))
        self._trees: dict[str, TreeState] = {}
        self._placements = Placements(QuotaDirectory(quotas={}), {}, {}, ExactSums(2, []))
        self._reserved_specs: dict[str, Quota] = {}
        self._topology_dirty = True
        #: Pods that changed while a topology change awaited its rebuild (placed by the rebuild).
        self._stale: set[str] = set()
        #: The quotas' layout rows, reused by the next rebuild where their spec did not change.
        self._rows: RowMemo = {}
        #: Every tree's results in one mapping, as the last snapshot published them (None: stale).
        self._quotas: Mapping[str, QuotaResult] | None = None
        #: How many topologies were built: every tree's state is new after each one.
        self.topology_epoch = 0
        #: How many rebuilds were prepared; the pods that changed since the latest was prepared
        #: (placed again when it is installed).
        self._rebuild_serial = 0
        self._changed_since_job: set[str] = set()
        #: User and group limits (``core.userlimits``): per tree the book and the ledger of the
        #: bound pods, rebuilt with the topology and fed pod by pod in between.
        self._users = UserLimitTracker.empty(self.settings.default_user)
        self._limit_memo: LimitMemo = {}
        self._limit_problems: list[Problem] = []

    # -- events -------------------------------------------------------------------------------

    def upsert_quota(self, spec: Quota) -> None:
        """Add or replace a quota; an identical spec (only our annotations moved) is a no-op."""
        self._topology_dirty |= self._quota_specs.upsert(spec)

    def hold_name(self, quota: Quota) -> None:
        """A quota object whose spec is unusable: in no tree, it still owns its name
        (``core.solve.quotaspecs``)."""
        self._topology_dirty |= self._quota_specs.hold(quota)

    def delete_quota(self, namespace: str, name: str) -> None:
        self._topology_dirty |= self._quota_specs.delete(namespace, name)

    @property
    def specs(self) -> list[Quota]:
        """The usable quota specs the engine holds now."""
        return list(self._quota_specs.specs.values())

    def quota(self, name: str) -> Quota | None:
        """The spec of quota ``name`` in its tree as of the last solve (None: none by that name,
        or one left out of its tree)."""
        return self._topology.quotas.get(name)

    def upsert_pod(self, pod: PodInfo) -> None:
        """Add or replace a pod; an identical one (e.g. only its conditions moved) is a no-op.

        While a quota change awaits the topology rebuild the pod is only noted: the rebuild
        places it with the new topology."""
        key = pod.key
        old = self._pods.get(key)
        if old == pod:
            return
        self._pods[key] = pod
        if not pod.node_name:
            self._unbound[key] = pod
        elif old is not None and not old.node_name:  # bound now (unbound held none other)
            self._unbound.pop(key)
        if self._topology_dirty:
            self._stale.add(key)
            self._changed_since_job.add(key)
            return
        if old is not None:
            self._placements.unplace(old)
        self._placements.place(pod)
        self._users.unplace(key)
        self._users.place(pod, self._placements.index.quota_of.get(key))

    def delete_pod(self, namespace: str, name: str) -> None:
        """Forget a pod (nothing for an unknown one)."""
        key = f"{namespace}/{name}"
        old = self._pods.pop(key)
        if old is None:
            return
        if not old.node_name:
            self._unbound.pop(key)
        if self._topology_dirty:
            self._stale.discard(key)
            self._changed_since_job.add(key)
            self._placements.index.remove(key)  # its sums are rebuilt anyway
        else:
            self._placements.unplace(old)
        self._users.unplace(key)

    def upsert_node(self, node: NodeInfo) -> None:
        self._nodes.upsert(node)
        touch_tree(self._trees, DEFAULT_TREE)

    def delete_node(self, name: str) -> None:
        if self._nodes.delete(name):
            touch_tree(self._trees, DEFAULT_TREE)

    def load(
        self,
        quotas: Iterable[Quota] = (),
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

    # -- solving ------------------------------------------------------------------------------

    def solve_tree(self, tree_id: str) -> Mapping[str, QuotaResult]:
        """One tree's results (recomputed if dirty); empty for a tree that no longer exists."""
        self._ensure_topology()
        state = self._trees.get(tree_id)
        if state is None:
            return {}
        if state.dirty:
            self._solve_tree(tree_id, state)
        return state.results

    def solve(self) -> Snapshot:
        """Recompute every dirty tree and return the state of all of them."""
        self._ensure_topology()
        # Trees are independent once the topology is built (the default tree's total depends on
        # the profile roots' specs, not on their results), so any order gives the same snapshot.
        for tree_id in sorted(self._trees):
            state = self._trees[tree_id]
            if state.dirty:
                self._solve_tree(tree_id, state)
        return self._snapshot()

    def latest(self) -> Snapshot:
        """The state as of each tree's last solve, without solving (trees out of date keep their
        last results; the pods are those of now): for readers that can act on results a pass
        old. After a topology change, a full ``solve`` (the old trees no longer hold)."""
        if self._topology_dirty:
            return self.solve()
        return self._snapshot()

    def _solve_tree(self, tree_id: str, state: TreeState) -> None:
        """One kernel call; only the rows whose outputs moved become new results."""
        job = self._job(tree_id, state)
        self.finish_solve(job, compute(job, self._solver))

    @property
    def solver(self) -> Solver:
        return self._solver

    def prepare_solve(self, tree_id: str) -> SolveJob | None:
        """The inputs of the tree's solve, copied (``solvejob``); None when the tree is up
        to date or gone. Brings the topology up to date first."""
        self._ensure_topology()
        state = self._trees.get(tree_id)
        if state is None or not state.dirty:
            return None
        return self._job(tree_id, state)

    def _job(self, tree_id: str, state: TreeState) -> SolveJob:
        layout = state.layout
        total = tree_total(self._topology, tree_id, self._nodes.total, self._placements.reserved)
        return SolveJob(
            tree_id=tree_id,
            epoch=self.topology_epoch,
            version=state.version,
            publications=state.publications,
            arrays=tree_arrays(layout, state.sums.mirror, total),
            total=total,
            layout=layout,
            topology=self._topology,
            previous=state.output,
            published=state.results,
            over_used=state.over_used,
            scale_min_quota=self.settings.scale_min_quota,
        )

    def finish_solve(self, job: SolveJob, outcome: SolveOutcome) -> bool:
        """Publish a job's results; False (nothing published, the tree stays dirty) when the
        topology was rebuilt or another solve of the tree was published since it was prepared.
        The tree stays dirty, too, when it changed after the job was prepared."""
        state = self._trees.get(job.tree_id)
        stale = job.epoch != self.topology_epoch or self._topology_dirty
        if state is None or stale or state.publications != job.publications:
            return False
        merged = outcome.merged  # the job's published results are still the tree's (above)
        state.total = job.total
        if outcome.kernel_root is not None:  # the default tree: its reserved quotas, as of now
            reserved = self._placements.reserved
            merged = merged.with_results(
                reserved_results(outcome.kernel_root, self._reserved_specs, reserved, job.total)
            )
        if state.publish(merged, outcome.output):
            self._quotas = None
        state.publications += 1
        state.dirty = state.version != job.version
        return True

    # -- topology -----------------------------------------------------------------------------

    def _ensure_topology(self) -> None:
        if self._topology_dirty:
            self._rebuild()

    def _rebuild(self) -> None:
        """New topology: rebuild every tree's layout and re-place every pod (all at once, moving
        only those whose quota changed); the three steps of ``core.solve.rebuild`` in a row."""
        job = self.prepare_rebuild()
        if job is not None:
            self.finish_rebuild(job, compute_rebuild(job))

    def prepare_rebuild(self) -> RebuildJob | None:
        """The inputs of a topology rebuild, copied or frozen (``rebuild``); None when the
        topology is up to date. A job prepared earlier can no longer be installed."""
        if not self._topology_dirty:
            return None
        self._rebuild_serial += 1
        self._changed_since_job = set()
        return RebuildJob(
            serial=self._rebuild_serial,
            epoch=self.topology_epoch,
            spec_changes=self._quota_specs.changes,
            specs=tuple(self._quota_specs.specs.values()),
            owners=dict(self._topology.owners),
            holders=tuple(self._quota_specs.holders.values()),
            node_keys=frozenset(self._nodes.total),
            pods=self._pods.freeze(),
            stale=frozenset(self._stale),
            placements=self._placements,
            index=self._placements.index.fork(),
            rows=dict(self._rows),
            reserved=ReservedDefaults(
                self.settings.reserved_namespace,
                self.settings.system_quota_max,
                self.settings.default_quota_max,
            ),
            limit_memo=dict(self._limit_memo),
            users=self._users.fork(),
        )

    def finish_rebuild(self, job: RebuildJob, outcome: RebuildOutcome) -> bool:
        """Install a rebuild's outcome and place again the pods that changed after the job was
        prepared: O(those pods). False (nothing installed) when another rebuild was prepared or
        installed since. The topology stays out of date when quotas (or the nodes' resources)
        changed after the job was prepared: the next rebuild follows them."""
        if job.serial != self._rebuild_serial or job.epoch != self.topology_epoch:
            return False
        self._topology = outcome.topology
        self._reserved_specs = outcome.reserved_specs
        self._trees = outcome.trees
        self._placements = outcome.placements
        self._rows = outcome.rows
        self._users = outcome.users
        self._limit_memo = outcome.limit_memo
        self._limit_problems = outcome.limit_problems
        replay(self._placements, job.pods, self._pods, self._changed_since_job)
        self._users.place_again(
            self._changed_since_job, self._pods, self._placements.index.quota_of
        )
        self._changed_since_job = set()
        self._stale = set()
        self._topology_dirty = (
            self._quota_specs.changes != job.spec_changes
            or frozenset(self._nodes.total) != job.node_keys
        )
        self._quotas = None
        self.topology_epoch += 1
        return True
