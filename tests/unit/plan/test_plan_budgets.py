"""PodDisruptionBudgets in ``plan`` and ``explain``: the victims named whose eviction a budget of
the input would refuse now (``keptByBudgets``, ``kept by a budget``), for the next revocation
round and for the next gate round's in-quota preemption; a broken budget is a problem naming it
and takes nothing else down."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from elasticquota.core.keys import ADMISSION_GATE

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import CliRunner, K8s, Writer

KEPT = (
    "PodDisruptionBudget {key} allows no disruption now (status.disruptionsAllowed 0): the "
    "Eviction API refuses its eviction (429)"
)


def budget(
    namespace: str, name: str, selector: dict[str, Any], allowed: int | None = 0
) -> dict[str, Any]:
    """A PodDisruptionBudget as the API server returns it (without ``status``: as written)."""
    document: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"minAvailable": 1, "selector": selector},
    }
    if allowed is not None:
        document["status"] = {"disruptionsAllowed": allowed, "observedGeneration": 1}
    return document


def test_plan_names_the_revocation_victims_a_budget_keeps(
    examples: Path, write: Writer, plan_json: Callable[..., Any], run_cli: CliRunner
) -> None:
    trainers = write(budget("ml-research", "trainers", {}))  # every pod of the namespace
    document = plan_json(examples, trainers)
    assert [p for p in document["problems"] if "PodDisruptionBudget" in p["object"]] == []
    [entry] = [e for e in document["revocations"] if e["quota"] == "ml-research"]
    reason = KEPT.format(key="ml-research/trainers")
    assert entry["pods"] == ["ml-research/train-4", "ml-research/train-5"]
    assert entry["keptByBudgets"] == [
        {"pod": "ml-research/train-4", "reason": reason},
        {"pod": "ml-research/train-5", "reason": reason},
    ]
    table = run_cli("plan", "-o", "wide", "-f", examples, "-f", trainers).out
    assert "kept by a budget: ml-research/train-4 (PodDisruptionBudget" in " ".join(table.split())
    without = plan_json(examples)["revocations"]
    assert all("keptByBudgets" not in entry for entry in without)


def test_a_budget_that_allows_a_disruption_keeps_nothing(
    examples: Path, write: Writer, plan_json: Callable[..., Any]
) -> None:
    allowing = write(budget("ml-research", "trainers", {}, allowed=1))
    assert all("keptByBudgets" not in e for e in plan_json(examples, allowing)["revocations"])


def test_explain_says_a_budget_keeps_the_running_pod_it_explains(
    examples: Path, write: Writer, run_cli: CliRunner
) -> None:
    trainers = write(budget("ml-research", "trainers", {}))
    found = run_cli("explain", "ml-research/train-5", "-f", examples, "-f", trainers)
    reason = KEPT.format(key="ml-research/trainers")
    assert (
        f"kept by a budget: ml-research/train-5: {reason}; if refused, the round leaves it (429: "
        in found.out
    )
    document = run_cli(
        "explain", "ml-research/train-5", "-f", examples, "-f", trainers, "-o", "json"
    ).json()
    assert document["keptByBudgets"] == [{"pod": "ml-research/train-5", "reason": reason}]
    not_a_victim = run_cli("explain", "ml-research/train-1", "-f", examples, "-f", trainers)
    assert "kept by a budget" not in not_a_victim.out


def test_explain_and_plan_name_a_preemption_victim_a_budget_keeps(
    k8s: type[K8s], write: Writer, run_cli: CliRunner, plan_json: Callable[..., Any]
) -> None:
    new = k8s.pod("new", "team", {"cpu": "2"}, priority=5)
    new["spec"]["schedulingGates"] = [{"name": ADMISSION_GATE}]
    low = k8s.pod("low", "team", {"cpu": "4"}, node="n1", priority=0, labels={"app": "low"})
    quota = k8s.quota("team", {"cpu": "4"}, {"cpu": "4"}, allow_lent=False)
    keep = budget("team", "keep-low", {"matchLabels": {"app": "low"}}, allowed=None)
    path = write(quota, k8s.node("n1", {"cpu": "8"}), low, new, keep)

    found = run_cli("explain", "team/new", "-f", path)
    assert "preemption: the next gate round evicts 1 lower-priority pod(s)" in found.out
    assert (
        "kept by a budget: team/low: PodDisruptionBudget team/keep-low selects it; whether it "
        "allows a disruption now is in its status, not read; if refused, the gate round leaves it "
        "(429: a PreemptionBlocked Event, and its victims are chosen again without it; any other "
        "refusal: PreemptionFailed, and the preemption stops for the round)\n"
    ) in found.out
    [preemption] = plan_json(path)["preemptions"]
    assert [item["pod"] for item in preemption["keptByBudgets"]] == ["team/low"]


def test_a_broken_budget_is_a_problem_and_the_rest_is_computed(
    examples: Path, write: Writer, plan_json: Callable[..., Any]
) -> None:
    broken = budget("ml-research", "trainers", {"matchLabels": ["not", "a", "map"]})
    document = plan_json(examples, write(broken))
    [problem] = [p for p in document["problems"] if p["object"].startswith("PodDisruptionBudget")]
    assert problem["object"] == "PodDisruptionBudget ml-research/trainers"
    assert problem["message"].startswith("invalid object: spec.selector.matchLabels: ")
    assert document["revocations"] == plan_json(examples)["revocations"]


def test_a_victim_that_is_not_ready_goes_where_its_budget_is_met(
    k8s: type[K8s], write: Writer, plan_json: Callable[..., Any]
) -> None:
    """The Eviction API lets a pod that is not ready go when its budget is met (it does not
    count towards it); the Ready condition of the manifest says which; none counts as ready."""
    quota = k8s.quota("team", {"cpu": "1"}, {"cpu": "1"})
    pods = [
        k8s.pod(name, "team", {"cpu": "1"}, node="n1", labels={"app": "web"})
        for name in ("a", "b", "c")
    ]
    pods[1]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pods[2]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    for healthy, kept in ((2, ["team/a"]), (1, ["team/b", "team/a"])):
        web = budget("team", "web", {"matchLabels": {"app": "web"}})
        web["status"] |= {"currentHealthy": healthy, "desiredHealthy": 2}
        document = plan_json(write(quota, k8s.node("n1", {"cpu": "8"}), *pods, web))
        [entry] = [e for e in document["revocations"] if e["quota"] == "team"]
        assert entry["pods"] == ["team/b", "team/a"]  # b is not ready; a has no Ready condition
        assert [item["pod"] for item in entry["keptByBudgets"]] == kept
