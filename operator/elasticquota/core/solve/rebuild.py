"""A topology rebuild in three steps, so that its heavy middle can run off the event loop.

A quota added, moved or deleted rebuilds the topology: every tree's layout, and every pod resolved
and counted again. At 10,000 quotas and 100,000 pods that is about half a second of Python, far
beyond the event loop's budget. ``QuotaEngine.prepare_rebuild`` takes what the rebuild reads, each
part either copied (the specs, the layout memo; milliseconds) or frozen (the pods, and a fork of
the pod index: O(buckets), see ``cowmap``), into a ``RebuildJob``; ``compute_rebuild`` builds the
new topology, trees and placements from the job alone (user limits included: the books and
every bound pod's usage per user and group), touching nothing the engine changes afterwards, so
it may run in a worker thread while events keep arriving;
``QuotaEngine.finish_rebuild`` installs the outcome and places again, one at a time, the pods that
changed after the job was prepared. The synchronous rebuild runs the same steps in a row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticquota.core.generic.cowmap import FrozenMap
from elasticquota.core.keys import DEFAULT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.accounting import ExactSums, QuotaDirectory
from elasticquota.core.solve.layout import RowMemo
from elasticquota.core.solve.placement import Placements
from elasticquota.core.solve.podindex import PodIndex
from elasticquota.core.solve.trees import TreeState, build_trees
from elasticquota.core.tree.topology import Topology, build_topology
from elasticquota.core.userlimits.tracker import LimitMemo, UserLimitTracker, build_books


@dataclass(frozen=True, slots=True)
class ReservedDefaults:
    """The reserved quotas made when the cluster has none: their namespace and maxes."""

    namespace: str
    system_max: ResourceList
    default_max: ResourceList


@dataclass(frozen=True, slots=True)
class RebuildJob:
    """Everything a rebuild reads, as of ``prepare_rebuild``."""

    #: Which preparation this is (only the latest one prepared may be installed), the topology
    #: epoch and the count of quota changes then.
    serial: int
    epoch: int
    spec_changes: int
    specs: tuple[Quota, ...]
    #: Who owned each quota name in the current topology, and the quotas that hold their name
    #: without a usable spec (``QuotaEngine.hold_name``).
    owners: dict[str, Quota]
    holders: tuple[Quota, ...]
    node_keys: frozenset[str]
    pods: FrozenMap[PodInfo]
    #: Pods that changed since the index was last brought up to date.
    stale: frozenset[str]
    #: The engine's placements (only read: their aggregate memo) and a fork of their index.
    placements: Placements
    index: PodIndex
    rows: RowMemo
    reserved: ReservedDefaults
    #: The quotas' parsed user limits, reused where the annotation and max did not change.
    limit_memo: LimitMemo = field(default_factory=dict)
    #: A fork of the engine's user limits (books and ledgers), brought to the new topology.
    users: UserLimitTracker | None = None


@dataclass(frozen=True, slots=True)
class RebuildOutcome:
    """The new topology with its trees and placements (every pod of the job placed), and the
    user limits of every tree with every bound pod counted."""

    topology: Topology
    reserved_specs: dict[str, Quota]
    trees: dict[str, TreeState]
    placements: Placements
    rows: RowMemo
    users: UserLimitTracker
    limit_memo: LimitMemo
    limit_problems: list[Problem]


def compute_rebuild(job: RebuildJob) -> RebuildOutcome:
    """Build the topology, the trees and the placements: reads the job only (and changes only
    what it holds alone: its index fork and layout memo), safe in any thread."""
    topology = build_topology(job.specs, job.owners, job.holders)
    reserved_specs = reserved_quota_specs(topology, job.reserved)
    directory = QuotaDirectory.build({**topology.quotas, **reserved_specs})
    rows = job.rows
    trees = build_trees(topology, set(job.node_keys), rows)
    reserved_keys = sorted(
        set(reserved_specs[SYSTEM_QUOTA].max) | set(reserved_specs[DEFAULT_QUOTA].max)
    )
    placements = Placements(
        directory, topology.tree_of, trees, ExactSums(2, reserved_keys), job.index
    )
    placements.count_after(job.placements, job.pods, job.stale)
    memo = job.limit_memo
    books, limit_problems = build_books(topology, memo)
    users = (job.users or UserLimitTracker.empty()).rebuilt(
        topology, books, placements.left, placements.arrived, placements.index.by_quota
    )
    return RebuildOutcome(
        topology, reserved_specs, trees, placements, rows, users, memo, limit_problems
    )


def reserved_quota_specs(topology: Topology, defaults: ReservedDefaults) -> dict[str, Quota]:
    """The system and default quotas: as given, or made with the reference defaults."""
    specs: dict[str, Quota] = {}
    for name, default_max in (
        (SYSTEM_QUOTA, defaults.system_max),
        (DEFAULT_QUOTA, defaults.default_max),
    ):
        given = topology.reserved.get(name)
        specs[name] = given or Quota(name=name, namespace=defaults.namespace, max=dict(default_max))
    return specs


def replay(
    placements: Placements,
    placed: Mapping[str, PodInfo],
    current: Mapping[str, PodInfo],
    keys: set[str],
) -> None:
    """Bring ``placements`` (built from the pods ``placed``) up to the pods ``current`` for the
    pods ``keys`` that changed since: each leaves with the object it was placed as, and comes
    back as it is now (if it still exists)."""
    for key in sorted(keys):
        old = placed.get(key)
        if old is not None:
            placements.unplace(old)
        pod = current.get(key)
        if pod is not None:
            placements.place(pod)
