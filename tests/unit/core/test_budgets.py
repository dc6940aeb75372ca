"""Which evictions a PodDisruptionBudget would refuse (``core.decisions.budgets``), by the API
server's eviction rules for a running pod, and how budgets are read from manifests
(``api.parse.parse_disruption_budget``)."""

from __future__ import annotations

from typing import Any

import pytest

from elasticquota.api.budgets import parse_disruption_budget
from elasticquota.core.decisions.budgets import (
    DisruptionBudget,
    Selected,
    budgets_by_pod,
    eviction_refusal,
    refused_evictions,
)
from elasticquota.core.model.models import LabelRequirement, LabelSelector, PodInfo

WEB = LabelSelector({"app": "web"})


def running(name: str = "p", **changes: Any) -> PodInfo:
    fields: dict[str, Any] = {"node_name": "n1", "phase": "Running", **changes}
    return PodInfo(namespace="team", name=name, requests={"cpu": 1000}, **fields)


def budget(
    name: str = "keep", allowed: int | None = 0, selector: LabelSelector | None = WEB, **more: Any
) -> DisruptionBudget:
    return DisruptionBudget("team", name, selector, allowed, **more)


def over(
    *budgets: DisruptionBudget, ready: bool = True, pod: str = "team/p"
) -> dict[str, Selected]:
    """The budgets selecting ``pod`` (ready or not)."""
    return {pod: Selected(budgets, ready)}


def manifest(version: str = "v1", **parts: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"policy/{version}",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": "team", "generation": 2},
        **parts,
    }


@pytest.mark.parametrize(
    ("selector", "labels", "selects"),
    [
        (WEB, {"app": "web", "tier": "1"}, True),
        (WEB, {"app": "db"}, False),
        (WEB, {}, False),
        (LabelSelector({}, (LabelRequirement("tier", "In", ("1", "2")),)), {"tier": "2"}, True),
        (LabelSelector({}, (LabelRequirement("tier", "NotIn", ("1",)),)), {}, True),
        (LabelSelector({}, (LabelRequirement("tier", "Exists"),)), {"app": "web"}, False),
        (LabelSelector({}, (LabelRequirement("tier", "DoesNotExist"),)), {"app": "web"}, True),
        (LabelSelector(), {"app": "anything"}, True),  # empty: every pod (policy/v1)
        (None, {"app": "web"}, False),  # null: none
    ],
)
def test_a_selector_selects_pods_of_its_namespace_by_their_labels(
    selector: LabelSelector | None, labels: dict[str, str], selects: bool
) -> None:
    assert budget(selector=selector).selects("team", labels) is selects
    assert budget(selector=selector).selects("other", labels) is False


def test_budgets_are_matched_to_the_pods_they_select_sorted_by_name() -> None:
    budgets = [budget("b"), budget("a", selector=LabelSelector()), budget("c", selector=None)]
    pods = [
        ("team", "web", {"app": "web"}, True),
        ("team", "db", {}, False),
        ("elsewhere", "web", {"app": "web"}, True),
    ]
    found = budgets_by_pod(budgets, pods)
    assert {key: ([b.name for b in kept.budgets], kept.ready) for key, kept in found.items()} == {
        "team/web": (["a", "b"], True),
        "team/db": (["a"], False),
    }


def test_one_budget_that_allows_no_disruption_refuses_the_eviction() -> None:
    refusal = eviction_refusal(running(), over(budget(allowed=0)))
    assert refusal == (
        "PodDisruptionBudget team/keep allows no disruption now (status.disruptionsAllowed 0): "
        "the Eviction API refuses its eviction (429)"
    )
    assert eviction_refusal(running(), over(budget(allowed=1))) == ""
    assert eviction_refusal(running(), over(budget(allowed=0), pod="team/other")) == ""


def test_a_negative_allowance_is_refused_as_forbidden() -> None:
    assert eviction_refusal(running(), over(budget(allowed=-1))).endswith("its eviction (403)")


@pytest.mark.parametrize(
    ("policy", "current", "desired", "goes"),
    [
        ("", 3, 3, True),  # the budget is met: an unready pod does not lower it
        ("IfHealthyBudget", 4, 3, True),
        ("", 2, 3, False),  # not met: the allowance decides
        ("", 0, 0, False),  # nothing desired: the allowance decides
        ("AlwaysAllow", 0, 3, True),
    ],
)
def test_a_pod_that_is_not_ready_goes_where_its_budgets_policy_lets_it(
    policy: str, current: int, desired: int, goes: bool
) -> None:
    kept = budget(
        allowed=0, current_healthy=current, desired_healthy=desired, unhealthy_policy=policy
    )
    assert (eviction_refusal(running(), over(kept, ready=False)) == "") is goes
    assert eviction_refusal(running(), over(kept, ready=True)) != ""  # a ready pod: refused


def test_two_budgets_over_one_pod_refuse_the_eviction_whatever_they_allow() -> None:
    refusal = eviction_refusal(running(), over(budget("a", 5), budget("b", 5)))
    assert refusal.startswith("PodDisruptionBudgets team/a, team/b all select it: ")


def test_a_budget_the_disruption_controller_has_not_caught_up_with_refuses() -> None:
    stale = budget(allowed=3, generation=2, observed_generation=1)
    assert "has not caught up" in eviction_refusal(running(), over(stale))
    current = budget(allowed=3, generation=2, observed_generation=2)
    assert eviction_refusal(running(), over(current)) == ""


def test_a_budget_without_status_says_it_cannot_tell() -> None:
    said = eviction_refusal(running(), over(budget(allowed=None, generation=1)))
    assert said == (
        "PodDisruptionBudget team/keep selects it; whether it allows a disruption now is in its "
        "status, not read"
    )


@pytest.mark.parametrize(
    "pod",
    [running(phase="Pending"), running(phase="Succeeded"), running(terminating=True)],
    ids=["pending", "finished", "being-deleted"],
)
def test_budgets_do_not_apply_to_a_pod_that_is_not_running(pod: PodInfo) -> None:
    assert eviction_refusal(pod, over(budget("a", 0), budget("b", 0))) == ""


def test_refused_evictions_keeps_the_victims_order() -> None:
    victims = [running("c"), running("a"), running("b")]
    budgets = {**over(budget(allowed=0), pod="team/c"), **over(budget(allowed=0), pod="team/b")}
    assert [pod.name for pod, _ in refused_evictions(victims, budgets)] == ["c", "b"]


def test_a_manifest_is_read_with_its_selector_policy_and_status() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "t", "operator": "Exists"}],
    }
    spec = {"selector": selector, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    status = {
        "disruptionsAllowed": 2, "observedGeneration": 1, "currentHealthy": 5, "desiredHealthy": 3
    }  # fmt: skip
    read, problems = parse_disruption_budget(manifest(spec=spec, status=status))
    assert problems == []
    assert read == DisruptionBudget(
        "team", "keep", LabelSelector({"app": "web"}, (LabelRequirement("t", "Exists"),)),
        disruptions_allowed=2, generation=2, observed_generation=1, current_healthy=5,
        desired_healthy=3, unhealthy_policy="AlwaysAllow",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("version", "spec", "selects"),
    [
        ("v1", {"selector": {}}, True),
        ("v1beta1", {"selector": {}}, False),
        ("v1", {"selector": None}, False),
        ("v1", {}, False),
        ("v1beta1", {"selector": {"matchLabels": {"app": "web"}}}, True),
    ],
)
def test_an_empty_selector_selects_every_pod_in_v1_and_none_in_v1beta1(
    version: str, spec: dict[str, Any], selects: bool
) -> None:
    read, _ = parse_disruption_budget(manifest(version, spec=spec))
    assert read is not None
    assert read.selects("team", {"app": "web"}) is selects


def test_a_manifest_without_status_allows_nothing_known() -> None:
    read, _ = parse_disruption_budget(manifest(spec={"selector": {}}))
    assert read is not None and read.disruptions_allowed is None


def test_a_broken_manifest_is_a_problem_naming_it() -> None:
    read, problems = parse_disruption_budget(manifest(spec={"selector": {"matchLabels": "web"}}))
    assert read is None
    [problem] = problems
    assert problem.object == "PodDisruptionBudget team/keep"
    assert problem.message.startswith("invalid object: spec.selector.matchLabels: ")
