"""A raw PodDisruptionBudget to the core's ``DisruptionBudget`` (``core.decisions.budgets``), for
``plan`` and ``explain``; the operator itself never reads budgets (it learns of one from a refused
eviction)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticquota.api.parse import Parsed, label_selector, read_view
from elasticquota.api.schema import DisruptionBudgetStatusView, DisruptionBudgetView
from elasticquota.core.decisions.budgets import DisruptionBudget


def parse_disruption_budget(raw: Mapping[str, Any]) -> Parsed:
    """A PodDisruptionBudget to a ``DisruptionBudget`` (None, with the problem, when it does not
    read): an empty selector selects every pod of its namespace in ``policy/v1`` and none in
    ``policy/v1beta1``; no ``status`` leaves ``disruptions_allowed`` unknown (None)."""
    view, _, problems = read_view(DisruptionBudgetView, "PodDisruptionBudget", raw)
    if view is None:
        return None, problems
    selector = None if view.spec.selector is None else label_selector(view.spec.selector)
    if selector is not None and selector.empty and view.api_version == "policy/v1beta1":
        selector = None
    status = view.status or DisruptionBudgetStatusView()
    budget = DisruptionBudget(
        namespace=view.metadata.namespace,
        name=view.metadata.name,
        selector=selector,
        disruptions_allowed=None if view.status is None else status.disruptions_allowed,
        generation=view.metadata.generation,
        observed_generation=status.observed_generation,
        current_healthy=status.current_healthy,
        desired_healthy=status.desired_healthy,
        unhealthy_policy=view.spec.unhealthy_policy,
    )
    return budget, problems
