"""Typed, immutable views of the objects the engine reasons about.

They are built at the edge (``elasticquota.api``) from raw Kubernetes objects; the engine never sees
strings where it needs numbers, nor unvalidated input. Resource lists are in engine units
(``elasticquota.core.quantities.resources``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticquota.core.quantities.resources import ResourceList


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with one object: which object, and which rule it breaks."""

    object: str
    message: str
    left_out: bool = False
    """The object is left out (of its tree, or entirely): a structural problem, not a note."""


def own_application(namespace: str, name: str) -> str:
    """The application key of a pod that is an application of its own (``PodInfo``)."""
    return f"{namespace}/pod:{name}"


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
    #: metadata.creationTimestamp. It also names which pod of this name a decision was about: the
    #: writes that act on one (an eviction, a gate release) check it, so that a pod deleted and
    #: recreated under the same name (a StatefulSet's) is never evicted or released for the old
    #: one (the uid would do as well, at 90 bytes more per pod; this string is interned).
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
    #: The pod's application key (``userlimits.application_id``: ``<namespace>/<id>``); "" when
    #: the pod is an application of its own (most pods: the key is then built when asked for,
    #: ``application_key``, not held for each of 100,000 pods).
    application: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ref(self) -> str:
        return f"Pod {self.key}"

    @property
    def application_key(self) -> str:
        """The application key, the pod's own (``<namespace>/pod:<name>``) when it names none."""
        return self.application or own_application(self.namespace, self.name)

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

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` meet the requirement; an unknown operator meets nothing."""
        present = self.key in labels
        match self.operator:
            case "In":
                return present and labels[self.key] in self.values
            case "NotIn":
                return not present or labels[self.key] not in self.values
            case "Exists":
                return present
            case "DoesNotExist":
                return not present
        return False


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector`` (a profile's nodeSelector, a PodDisruptionBudget's selector):
    every matchLabels pair and every requirement must hold, so an empty one selects everything."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def selects(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        return all(item.matches(labels) for item in self.match_expressions)


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One ElasticQuotaProfile: a node pool and the root quota of its tree."""

    name: str
    namespace: str
    quota_name: str
    node_selector: LabelSelector = field(default_factory=LabelSelector)
    quota_labels: dict[str, str] = field(default_factory=dict)
    resource_ratio: str | None = None
    tree_id_label: str = ""
    resource_keys: tuple[str, ...] = ("cpu", "memory")
    #: The object's uid ("" in manifests that have none): Events about the profile name it, as
    #: ``kubectl describe`` lists only the Events whose ``involvedObject.uid`` is the object's.
    uid: str = ""

    @property
    def ref(self) -> str:
        return f"ElasticQuotaProfile {self.namespace}/{self.name}"
