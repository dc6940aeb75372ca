"""PodDisruptionBudgets as ``explain`` and ``plan`` see them: would the Eviction API refuse a pod?

The operator evicts through the Eviction API, which honours PodDisruptionBudgets: it learns that a
budget keeps a pod only from the refusal (429), and then leaves the pod (a revocation round, by
default) or chooses others (in-quota preemption; a revocation round with
``REVOCATION_AROUND_BUDGETS``). ``explain`` and ``plan`` read the budgets instead and say which of
the pods they name as victims would be refused, by the rules of the API server's eviction (its
``pkg/registry/core/pod/storage/eviction.go``) for a running pod:

* the budgets of a pod are those of its namespace whose selector selects its labels. A null
  selector selects nothing; an empty one (``{}``) selects every pod of the namespace in
  ``policy/v1`` and nothing in ``policy/v1beta1`` (the server shows such a ``v1beta1`` budget
  through ``v1`` with a requirement no pod meets);
* more than one budget: refused (the eviction subresource supports one per pod);
* one budget the disruption controller has not caught up with (``status.observedGeneration``
  below ``metadata.generation``): refused until it has;
* one budget with ``status.disruptionsAllowed`` 0 (or less): refused;
* a pod that is not running (pending, finished, or being deleted): budgets do not apply.

(Since Kubernetes 1.26 a budget's ``unhealthyPodEvictionPolicy`` may let a pod that is not ready
go while its budget allows nothing; readiness is not read here, so such a pod is said refused.)

A budget read from a file may have no status: it then selects the pod, and whether it allows a
disruption is unknown, which is said as such. Pure: budgets and labels in, text out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from elasticquota.core.model.models import LabelRequirement, PodInfo
from elasticquota.core.tree.profiles import requirement_matches


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: every matchLabels pair and every requirement must hold."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def selects(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        return all(requirement_matches(item, labels) for item in self.match_expressions)


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """One PodDisruptionBudget, as far as an eviction's fate depends on it."""

    namespace: str
    name: str
    #: None: selects no pod (a null selector, or an empty one read as ``policy/v1beta1``).
    selector: LabelSelector | None
    #: ``status.disruptionsAllowed``; None: no status (a manifest written without one).
    disruptions_allowed: int | None = None
    #: ``metadata.generation`` and ``status.observedGeneration`` (0: not given).
    generation: int = 0
    observed_generation: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return (
            namespace == self.namespace
            and self.selector is not None
            and (self.selector.empty or self.selector.selects(labels))
        )


#: By pod key: the budgets that select it (pods no budget selects are absent).
PodBudgets = Mapping[str, Sequence[DisruptionBudget]]

NO_BUDGETS: PodBudgets = MappingProxyType({})


def budgets_by_pod(
    budgets: Sequence[DisruptionBudget], pods: Iterable[tuple[str, str, Mapping[str, str]]]
) -> dict[str, list[DisruptionBudget]]:
    """For each ``(namespace, name, labels)`` of ``pods``, the budgets that select it (sorted by
    name; pods none selects are left out)."""
    by_namespace: dict[str, list[DisruptionBudget]] = {}
    for budget in sorted(budgets, key=lambda each: each.key):
        by_namespace.setdefault(budget.namespace, []).append(budget)
    found: dict[str, list[DisruptionBudget]] = {}
    for namespace, name, labels in pods:
        selecting = [b for b in by_namespace.get(namespace, ()) if b.selects(namespace, labels)]
        if selecting:
            found[f"{namespace}/{name}"] = selecting
    return found


def eviction_refusal(pod: PodInfo, budgets: PodBudgets) -> str:
    """Why the Eviction API would refuse to evict ``pod`` now for its budgets ("" when it would
    not, as far as the budgets say), or that a budget selecting it has no status to tell."""
    selecting = budgets.get(pod.key, ())
    if not selecting or pod.phase != "Running" or pod.terminating:
        return ""
    if len(selecting) > 1:
        names = ", ".join(budget.key for budget in selecting)
        return (
            f"PodDisruptionBudgets {names} all select it: the Eviction API refuses to evict a "
            "pod more than one budget selects (500)"
        )
    budget = selecting[0]
    what = f"PodDisruptionBudget {budget.key}"
    if budget.disruptions_allowed is None:
        return f"{what} selects it; whether it allows a disruption now is in its status, not read"
    if budget.observed_generation < budget.generation:
        return (
            f"{what} has changed and the disruption controller has not caught up with it "
            "(status.observedGeneration < metadata.generation): the Eviction API refuses "
            "evictions under it until it has (429)"
        )
    if budget.disruptions_allowed <= 0:
        return (
            f"{what} allows no disruption now (status.disruptionsAllowed "
            f"{budget.disruptions_allowed}): the Eviction API refuses its eviction (429)"
        )
    return ""


def refused_evictions(victims: Iterable[PodInfo], budgets: PodBudgets) -> list[tuple[PodInfo, str]]:
    """The victims whose eviction a budget would refuse now, each with why (``eviction_refusal``:
    a budget without a status is said as well)."""
    return [(pod, why) for pod in victims if (why := eviction_refusal(pod, budgets))]
