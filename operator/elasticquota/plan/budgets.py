"""The PodDisruptionBudgets of a plan's input, by the pods they select (``core.decisions.budgets``).

``plan`` and ``explain`` name the pods the next rounds would evict; with the budgets read they also
say which of those evictions the Eviction API would refuse now. Pods are matched by the labels of
their manifests, with their readiness (the engine's ``PodInfo`` keeps neither).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from elasticquota.api.budgets import parse_disruption_budget
from elasticquota.core.decisions.budgets import (
    DisruptionBudget,
    LabelledPod,
    Selected,
    budgets_by_pod,
)
from elasticquota.core.model.models import Problem


def pod_budgets(
    raw_budgets: list[dict[str, Any]], raw_pods: list[dict[str, Any]], problems: list[Problem]
) -> dict[str, Selected]:
    """The budgets that select each pod (by key), those that cannot be read reported in
    ``problems`` and left out."""
    budgets: list[DisruptionBudget] = []
    for raw in raw_budgets:
        budget, found = parse_disruption_budget(raw)
        problems.extend(found)
        if budget is not None:
            budgets.append(budget)
    if not budgets:
        return {}
    return budgets_by_pod(budgets, _labelled(raw_pods))


def _labelled(raw_pods: list[dict[str, Any]]) -> Iterator[LabelledPod]:
    """Each pod's namespace, name, labels and readiness (a pod without a name or with labels that
    are not a mapping of strings is left out: the parse reports it)."""
    for raw in raw_pods:
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            continue
        labels = metadata.get("labels") or {}
        if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
            namespace, name = str(metadata.get("namespace") or ""), str(metadata["name"])
            yield namespace, name, labels, _ready(raw)


def _ready(raw: dict[str, Any]) -> bool:
    """The pod's ``Ready`` condition is True, or it has none (a manifest written for ``plan``:
    a running pod there is taken as ready; the kubelet always reports the condition)."""
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return True
    ready = [c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"]
    return not ready or ready[-1].get("status") == "True"
