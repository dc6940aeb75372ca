"""The PodDisruptionBudgets of a plan's input, by the pods they select (``core.decisions.budgets``).

``plan`` and ``explain`` name the pods the next rounds would evict; with the budgets read they also
say which of those evictions the Eviction API would refuse now. Pods are matched by the labels of
their manifests (the engine's ``PodInfo`` keeps none).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from elasticquota.api.parse import parse_disruption_budget
from elasticquota.core.decisions.budgets import DisruptionBudget, budgets_by_pod
from elasticquota.core.model.models import Problem


def pod_budgets(
    raw_budgets: list[dict[str, Any]], raw_pods: list[dict[str, Any]], problems: list[Problem]
) -> dict[str, list[DisruptionBudget]]:
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


def _labelled(raw_pods: list[dict[str, Any]]) -> Iterator[tuple[str, str, Mapping[str, str]]]:
    """Each pod's namespace, name and labels (a pod without a name or with labels that are not a
    mapping of strings is left out: the parse reports it)."""
    for raw in raw_pods:
        metadata = raw.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            continue
        labels = metadata.get("labels") or {}
        if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
            yield str(metadata.get("namespace") or ""), str(metadata["name"]), labels
