"""Typed, immutable views of the objects the engine reasons about.

They are built at the edge (``elasticquota.api``) from raw Kubernetes objects; the engine never sees
strings where it needs numbers, nor unvalidated input. Resource lists are in engine units
(``elasticquota.core.quantities.resources``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elasticquota.core.keys import DEFAULT_TREE, ROOT_QUOTA
from elasticquota.core.quantities.resources import ResourceList


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with one object: which object, and which rule it breaks."""

    object: str
    message: str
    left_out: bool = False
    """The object is left out (of its tree, or entirely): a structural problem, not a note."""


@dataclass(frozen=True, slots=True)
class QuotaSpec:
    """One ElasticQuota as the engine needs it."""

    name: str
    namespace: str
    min: ResourceList = field(default_factory=dict)
    max: ResourceList = field(default_factory=dict)
    parent: str = ROOT_QUOTA
    is_parent: bool = False
    allow_lent: bool = True
    tree_id: str = DEFAULT_TREE
    is_root: bool = False
    ignore_default_tree: bool = False
    #: The ``shared-weight`` annotation; None (absent, unparsable or all zero) means "use max".
    shared_weight: ResourceList | None = None
    namespaces: tuple[str, ...] = ()
    #: A profile tree's total (the ``total-resource`` annotation on its root quota).
    total_resource: ResourceList | None = None
    #: Extension: at most this much of the unused min may be lent outside the subtree.
    lending_limit: ResourceList | None = None
    #: Extension: the subtree never gets more than min + borrowing limit.
    borrowing_limit: ResourceList | None = None
    #: RFC 3339 creation time, used to pick the survivor among duplicated names.
    created: str = ""
    #: metadata.uid: the last tie-break among duplicated names, and what a name record names.
    uid: str = ""
    #: The ``elasticquota.dev/name-owner`` annotation (the uid of the object that owns the name).
    name_record: str = ""
    #: The ``elasticquota.dev/user-limits`` annotation as written (None: absent); parsed and
    #: checked by the engine (``core.userlimits``), once per change of the quota.
    user_limits: str | None = None

    @property
    def holds_name_record(self) -> bool:
        """The operator recorded this very object as the owner of its name."""
        return bool(self.uid) and self.name_record == self.uid

    @property
    def ref(self) -> str:
        return f"ElasticQuota {self.namespace}/{self.name}"

    @property
    def effective_weight(self) -> ResourceList:
        """Shared weight as the reference uses it: the annotation, or max when absent or all
        zero."""
        if self.shared_weight is None or not any(self.shared_weight.values()):
            return dict(self.max)
        return dict(self.shared_weight)


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One Pod: where it belongs, what it asks for and whether it holds resources."""

    namespace: str
    name: str
    #: Effective request (containers, init containers, overhead) in engine units, unmasked.
    requests: ResourceList
    quota_label: str = ""
    preemptible: bool = True
    priority: int = 0
    phase: str = "Pending"
    node_name: str = ""
    #: status.startTime as epoch seconds; None counts as "now" when ordering victims.
    start_time: float | None = None
    created: str = ""
    #: metadata.deletionTimestamp is set: the pod is going (it still counts until it is gone).
    terminating: bool = False
    #: metadata.deletionTimestamp as epoch seconds: the end of the grace period, by which the
    #: kubelet has stopped the containers and removes the pod (None: not being deleted).
    deletion_deadline: float | None = None
    #: spec.schedulingGates names: the scheduler ignores the pod while any is present.
    scheduling_gates: tuple[str, ...] = ()
    #: spec.preemptionPolicy "Never": the pod never takes others' places.
    never_preempts: bool = False
    #: Who the pod runs for (``elasticquota.dev/user-info``; "" when absent: the engine's default
    #: user) and that user's groups, for the user and group limits (``core.userlimits``).
    user: str = ""
    groups: tuple[str, ...] = ()
    #: The pod's application key (``userlimits.application_id``: ``<namespace>/<id>``).
    application: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ref(self) -> str:
        return f"Pod {self.key}"

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def counts_in_request(self) -> bool:
        """Every live pod asks for its resources, pending or running."""
        return not self.is_terminal

    @property
    def is_assigned(self) -> bool:
        """Bound to a node and not finished: it holds its resources (counts in used)."""
        return bool(self.node_name) and not self.is_terminal


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One Node: its allocatable resources and the facts profiles look at."""

    name: str
    allocatable: ResourceList
    labels: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One matchExpressions entry of a label selector."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One ElasticQuotaProfile: a node pool and the root quota of its tree."""

    name: str
    namespace: str
    quota_name: str
    match_labels: dict[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()
    quota_labels: dict[str, str] = field(default_factory=dict)
    resource_ratio: str | None = None
    tree_id_label: str = ""
    resource_keys: tuple[str, ...] = ("cpu", "memory")

    @property
    def ref(self) -> str:
        return f"ElasticQuotaProfile {self.namespace}/{self.name}"
