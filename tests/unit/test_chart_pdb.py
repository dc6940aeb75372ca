"""The chart's PodDisruptionBudget: rendered with more than one replica, and refused when it
would keep every replica (``minAvailable`` as a number or a percentage, rounded up as Kubernetes'
disruption controller rounds it): nothing could then be evicted, and every node drain or cluster
upgrade would wait for ever.

With helm: ``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH.
"""

from __future__ import annotations

from typing import Any

import pytest
from chart_render import Manifest, TemplateError, helm_template


def budgets(manifests: list[Manifest]) -> list[Manifest]:
    return [body for body in manifests if body["kind"] == "PodDisruptionBudget"]


@pytest.mark.parametrize(("replicas", "min_available"), [(2, 1), (3, 2), (3, "50%"), (4, "74%")])
def test_a_budget_that_leaves_one_replica_to_evict_is_rendered(
    replicas: int, min_available: Any
) -> None:
    values = {"replicaCount": replicas, "podDisruptionBudget": {"minAvailable": min_available}}
    (budget,) = budgets(helm_template(values=values))
    assert budget["spec"]["minAvailable"] == min_available


def test_one_replica_has_no_budget() -> None:
    assert budgets(helm_template(values={"replicaCount": 1})) == []


@pytest.mark.parametrize(
    ("replicas", "min_available"), [(2, 2), (2, 3), (2, "100%"), (2, "51%"), (4, "76%")]
)
def test_a_budget_that_keeps_every_replica_is_refused(replicas: int, min_available: Any) -> None:
    values = {"replicaCount": replicas, "podDisruptionBudget": {"minAvailable": min_available}}
    with pytest.raises(TemplateError) as refused:
        helm_template(values=values)
    assert f"podDisruptionBudget.minAvailable {min_available} keeps all {replicas} replicas" in (
        refused.value.stderr
    ), refused.value.stderr
