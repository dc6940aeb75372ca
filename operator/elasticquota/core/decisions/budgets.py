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
* a pod that is not ready goes whatever the budget allows when its ``unhealthyPodEvictionPolicy``
  is ``AlwaysAllow``, and otherwise (``IfHealthyBudget``, the default) when the budget is met
  (``status.currentHealthy`` at least ``status.desiredHealthy``, which is above 0);
* one budget the disruption controller has not caught up with (``status.observedGeneration``
  below ``metadata.generation``): refused until it has (429);
* one budget with ``status.disruptionsAllowed`` 0: refused (429); below 0: refused (403);
* a pod that is not running (pending, finished, or being deleted): budgets do not apply.

A pod's manifest without a ``Ready`` condition (one written by hand for ``plan``) counts as ready.

A budget read from a file may have no status: it then selects the pod, and whether it allows a
disruption is unknown, which is said as such. Pure: budgets and labels in, text out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from elasticquota.core.model.models import LabelSelector, PodInfo


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
    #: ``status.currentHealthy`` and ``status.desiredHealthy`` (0: not given).
    current_healthy: int = 0
    desired_healthy: int = 0
    #: ``spec.unhealthyPodEvictionPolicy`` ("": not set, as ``IfHealthyBudget``).
    unhealthy_policy: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return (
            namespace == self.namespace
            and self.selector is not None
            and (self.selector.empty or self.selector.selects(labels))
        )

    def lets_unready_go(self) -> bool:
        """Whether a pod that is not ready may be evicted whatever the budget allows."""
        if self.unhealthy_policy == "AlwaysAllow":
            return True
        return 0 < self.desired_healthy <= self.current_healthy


@dataclass(frozen=True, slots=True)
class Selected:
    """The budgets that select one pod, sorted by name, and whether the pod is ready."""

    budgets: tuple[DisruptionBudget, ...]
    ready: bool = True


#: By pod key: the budgets that select it (pods no budget selects are absent).
PodBudgets = Mapping[str, Selected]

#: A pod to match: its namespace, name, labels and readiness.
LabelledPod = tuple[str, str, Mapping[str, str], bool]

NO_BUDGETS: PodBudgets = MappingProxyType({})


def budgets_by_pod(
    budgets: Sequence[DisruptionBudget], pods: Iterable[LabelledPod]
) -> dict[str, Selected]:
    """For each ``(namespace, name, labels, ready)`` of ``pods``, the budgets that select it
    (pods none selects are left out)."""
    by_namespace: dict[str, list[DisruptionBudget]] = {}
    for budget in sorted(budgets, key=lambda each: each.key):
        by_namespace.setdefault(budget.namespace, []).append(budget)
    found: dict[str, Selected] = {}
    for namespace, name, labels, ready in pods:
        selecting = [b for b in by_namespace.get(namespace, ()) if b.selects(namespace, labels)]
        if selecting:
            found[f"{namespace}/{name}"] = Selected(tuple(selecting), ready)
    return found


def eviction_refusal(pod: PodInfo, budgets: PodBudgets) -> str:
    """Why the Eviction API would refuse to evict ``pod`` now for its budgets ("" when it would
    not, as far as the budgets say), or that a budget selecting it has no status to tell."""
    selected = budgets.get(pod.key)
    if selected is None or pod.phase != "Running" or pod.terminating:
        return ""
    selecting = selected.budgets
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
    if not selected.ready and budget.lets_unready_go():
        return ""
    if budget.observed_generation < budget.generation:
        return (
            f"{what} has changed and the disruption controller has not caught up with it "
            "(status.observedGeneration < metadata.generation): the Eviction API refuses "
            "evictions under it until it has (429)"
        )
    if budget.disruptions_allowed <= 0:
        code = 429 if budget.disruptions_allowed == 0 else 403
        return (
            f"{what} allows no disruption now (status.disruptionsAllowed "
            f"{budget.disruptions_allowed}): the Eviction API refuses its eviction ({code})"
        )
    return ""


def refused_evictions(victims: Iterable[PodInfo], budgets: PodBudgets) -> list[tuple[PodInfo, str]]:
    """The victims whose eviction a budget would refuse now, each with why (``eviction_refusal``:
    a budget without a status is said as well)."""
    return [(pod, why) for pod in victims if (why := eviction_refusal(pod, budgets))]
