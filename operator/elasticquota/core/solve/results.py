"""What the engine computed: one ``QuotaResult`` per quota, tree totals, and the pods behind them.

A ``Snapshot`` is immutable and self-contained: admission checks, revocation, the operator's writer
and the ``plan`` renderer read it without going back to the engine. The engine's snapshots share
unchanged parts with each other (frozen copy-on-write maps, result objects of quotas whose figures
did not move): nothing a snapshot exposes changes after it was made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.models import PodInfo, Problem
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.tracker import NO_USER_LIMITS, UserLimitsView


@dataclass(frozen=True, slots=True)
class QuotaResult:
    """Every figure of one quota, in engine units."""

    name: str
    namespace: str
    tree: str
    parent: str
    is_parent: bool
    min: ResourceList
    max: ResourceList
    effective_min: ResourceList
    shared_weight: ResourceList
    request: ResourceList
    child_request: ResourceList
    limited_request: ResourceList
    used: ResourceList
    #: The share it may use now, over the keys its parent distributes (absent key = not limited).
    runtime: ResourceList
    non_preemptible_request: ResourceList
    non_preemptible_used: ResourceList
    #: Reserved quotas (root, system, default) are never limited by their runtime.
    reserved: bool = False
    #: Extension: its lending and borrowing limits as its annotations set them (None: not set),
    #: carried for the metrics (the solve reads them from the spec).
    lending_limit: ResourceList | None = None
    borrowing_limit: ResourceList | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The solved state of every tree at one moment."""

    quotas: Mapping[str, QuotaResult]
    totals: Mapping[str, ResourceList]
    #: Every pod by key (the engine's come in no particular order: sort where order matters).
    pods: Mapping[str, PodInfo]
    #: pod key -> the quota it is accounted to.
    pod_quota: Mapping[str, str]
    #: quota -> its own pods, sorted by key (the engine gives immutable tuples).
    pods_by_quota: Mapping[str, Sequence[PodInfo]]
    problems: list[Problem] = field(default_factory=list)
    #: tree id -> the name of the ElasticQuotaProfile that heads it, for titles. The engine leaves
    #: it empty (it never needs it); ``plan`` and ``tree`` fill it from the root quotas' labels.
    tree_profiles: Mapping[str, str] = field(default_factory=dict)
    #: The user and group limits and every user's and group's usage (``core.userlimits``), frozen
    #: with the snapshot.
    user_limits: UserLimitsView = NO_USER_LIMITS
    #: The quotas whose used exceeds their runtime (``is_over_used``), kept up to date by the
    #: engine as it publishes results (O(moved) per solve); None: not kept, ``over_used_quotas``
    #: then looks at every quota.
    over_used: frozenset[str] | None = None
    #: The pods not bound to a node, by key, kept by the engine as pods come and go; None: not
    #: kept, ``unbound_pods`` then looks at every pod.
    unbound: Mapping[str, PodInfo] | None = None

    def over_used_quotas(self) -> frozenset[str]:
        """The quotas whose used exceeds their runtime on some resource."""
        if self.over_used is not None:
            return self.over_used
        quotas = self.quotas.items()
        return frozenset(name for name, got in quotas if is_over_used(got.used, got.runtime))

    def unbound_pods(self) -> Mapping[str, PodInfo]:
        """The pods not bound to a node (gated, released, or waiting for the scheduler)."""
        if self.unbound is not None:
            return self.unbound
        return {key: pod for key, pod in self.pods.items() if not pod.node_name}

    def pods_of(self, quota: str) -> Sequence[PodInfo]:
        """Pods accounted directly to ``quota``, sorted by key."""
        return self.pods_by_quota.get(quota, ())

    def ancestors(self, quota: str) -> list[str]:
        """Parents of ``quota`` from the nearest up to the top level (the virtual root excluded)."""
        chain: list[str] = []
        current = self.quotas[quota].parent
        while current and current != ROOT_QUOTA and current in self.quotas:
            chain.append(current)
            current = self.quotas[current].parent
        return chain


def is_over_used(used: Mapping[str, int], runtime: Mapping[str, int]) -> bool:
    """used > runtime on some resource both have.

    A plain loop: judged for every over-used quota at each revocation check, and this is four
    times faster than ``any()`` over a generator (160 against 675 ns for two resources)."""
    for key, value in used.items():  # noqa: SIM110 (the loop is the point: see above)
        if value > runtime.get(key, value):  # a resource runtime lacks: compared with itself
            return True
    return False
