"""Min scale-down when Σ min exceeds what a level has, and the special totals."""

from __future__ import annotations

import pytest
from engine_factories import BIG, SolveFunction, field_of, node, pod, quota, runtimes

from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota


def three_borrowers(minimums: dict[str, int]) -> tuple[list[Quota], list[PodInfo]]:
    """Quotas with the given cpu mins, each with a pod asking for far more than the cluster."""
    quotas = [quota(name, min={"cpu": value}, max={"cpu": BIG}) for name, value in minimums.items()]
    pods = [pod(f"p-{name}", name, cpu=BIG) for name in minimums]
    return quotas, pods


def test_mins_are_scaled_to_floor_of_total_times_min_over_sum(solve: SolveFunction) -> None:
    """T=100 < S=140: 100·30/140=21.4, 100·50/140=35.7, 100·60/140=42.9 → 21, 35, 42."""
    quotas, pods = three_borrowers({"a": 30, "b": 50, "c": 60})

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert field_of(snapshot, "effective_min", "cpu", "a", "b", "c") == {"a": 21, "b": 35, "c": 42}
    assert snapshot.quotas["a"].min == {"cpu": 30}
    # The 2 units the floors leave over are shared by weight (the maxes, all equal): a, b +1.
    assert runtimes(snapshot, "cpu", "a", "b", "c") == {"a": 22, "b": 36, "c": 42}


def test_idle_children_count_in_the_sum_of_mins(solve: SolveFunction) -> None:
    """c is idle (lends everything) but its min still shrinks the others' scaled mins."""
    quotas, pods = three_borrowers({"a": 30, "b": 50, "c": 60})
    pods = pods[:2]  # c has no pod

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert field_of(snapshot, "effective_min", "cpu", "a", "b", "c") == {"a": 21, "b": 35, "c": 42}
    assert runtimes(snapshot, "cpu", "c") == {"c": 0}
    # pool = 100 - 21 - 35 = 44, equal weights: 22 each.
    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 43, "b": 57}


def test_mins_that_fit_are_not_scaled(solve: SolveFunction) -> None:
    quotas, pods = three_borrowers({"a": 30, "b": 30, "c": 40})

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert field_of(snapshot, "effective_min", "cpu", "a", "b", "c") == {"a": 30, "b": 30, "c": 40}


def test_only_resources_short_of_min_are_scaled(solve: SolveFunction) -> None:
    """cpu is short (scaled), memory fits (kept): each resource is judged on its own."""
    quotas = [
        quota(name, min={"cpu": 60, "memory": 40}, max={"cpu": BIG, "memory": BIG})
        for name in ("a", "b")
    ]
    snapshot = solve(quotas, [], [node("n", cpu=100, memory=100)])

    assert snapshot.quotas["a"].effective_min == {"cpu": 50, "memory": 40}
    assert snapshot.quotas["b"].effective_min == {"cpu": 50, "memory": 40}


def test_scaling_uses_exact_integers_not_float64(solve: SolveFunction) -> None:
    """T = 2^60-1, mins 2^59 and 2^59: float64 rounds T·min/S up to 2^59 each (Σ > T); the exact
    floor is 2^59-1 each, and the last unit is shared out by the water-fill."""
    half = 2**59
    quotas = [quota(name, min={"memory": half}, max={"memory": 2**61}) for name in ("a", "b")]
    pods = [pod(f"p-{name}", name, memory=2**61) for name in ("a", "b")]

    snapshot = solve(quotas, pods, [node("n", memory=2**60 - 1)])

    assert field_of(snapshot, "effective_min", "memory", "a", "b") == {"a": half - 1, "b": half - 1}
    assert runtimes(snapshot, "memory", "a", "b") == {"a": half, "b": half - 1}


def test_children_are_scaled_against_the_parent_runtime_not_its_min(solve: SolveFunction) -> None:
    """p has min 100 but only 60 in the cluster: p's runtime 60 is what its children's mins
    (50 + 50) are scaled to."""
    quotas = [
        quota("p", min={"cpu": 100}, max={"cpu": BIG}, is_parent=True),
        quota("c1", min={"cpu": 50}, max={"cpu": BIG}, parent="p"),
        quota("c2", min={"cpu": 50}, max={"cpu": BIG}, parent="p"),
    ]
    pods = [pod("x", "c1", cpu=BIG), pod("y", "c2", cpu=BIG)]

    snapshot = solve(quotas, pods, [node("n", cpu=60)])

    assert snapshot.quotas["p"].effective_min == {"cpu": 60}
    assert snapshot.quotas["p"].runtime == {"cpu": 60}
    assert field_of(snapshot, "effective_min", "cpu", "c1", "c2") == {"c1": 30, "c2": 30}
    assert runtimes(snapshot, "cpu", "c1", "c2") == {"c1": 30, "c2": 30}


def test_without_scaling_mins_are_kept_and_runtimes_can_exceed_the_total(
    solve: SolveFunction,
) -> None:
    """Case 018: scale disabled, Σ min 130 > T 100: both keep their min."""
    quotas = [
        quota("a", min={"cpu": 60}, max={"cpu": BIG}),
        quota("b", min={"cpu": 70}, max={"cpu": BIG}),
    ]
    pods = [pod("pa", "a", cpu=80), pod("pb", "b", cpu=70)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)], scale_min_quota=False)

    assert field_of(snapshot, "effective_min", "cpu", "a", "b") == {"a": 60, "b": 70}
    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 60, "b": 70}
    assert sum(value or 0 for value in runtimes(snapshot, "cpu", "a", "b").values()) > 100


def test_with_scaling_the_same_quotas_fit_the_total(solve: SolveFunction) -> None:
    quotas = [
        quota("a", min={"cpu": 60}, max={"cpu": BIG}),
        quota("b", min={"cpu": 70}, max={"cpu": BIG}),
    ]
    pods = [pod("pa", "a", cpu=80), pod("pb", "b", cpu=70)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    # floor(100·60/130) = 46, floor(100·70/130) = 53, pool 1 by weight (equal): a.
    assert field_of(snapshot, "effective_min", "cpu", "a", "b") == {"a": 46, "b": 53}
    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 47, "b": 53}


@pytest.mark.parametrize("resource", ["gpu", "memory"])
@pytest.mark.parametrize("scale_min_quota", [True, False])
def test_resource_absent_from_the_cluster_gives_request_or_min(
    solve: SolveFunction, resource: str, scale_min_quota: bool
) -> None:
    """No node has the resource: its total is 0 and it is never scaled, so a lending quota
    at or under its min gets its request and a borrower its min."""
    quotas = [
        quota("lender", min={"cpu": 10, resource: 4}, max={"cpu": BIG, resource: 8}),
        quota("borrower", min={"cpu": 10, resource: 4}, max={"cpu": BIG, resource: 8}),
    ]
    pods = [
        pod("pl", "lender", cpu=1, **{resource: 3}),
        pod("pb", "borrower", cpu=1, **{resource: 6}),
    ]

    snapshot = solve(quotas, pods, [node("n", cpu=100)], scale_min_quota=scale_min_quota)

    assert resource not in snapshot.totals[""]
    assert field_of(snapshot, "effective_min", resource, "lender", "borrower") == {
        "lender": 4,
        "borrower": 4,
    }
    assert runtimes(snapshot, resource, "lender", "borrower") == {"lender": 3, "borrower": 4}


def test_resource_with_zero_total_is_scaled_to_zero(solve: SolveFunction) -> None:
    """A resource present with 0 (a node reports gpu: 0) is short: every min scales to 0."""
    quotas = [quota("a", min={"gpu": 4}, max={"gpu": 8})]
    snapshot = solve(quotas, [pod("p", "a", gpu=2)], [node("n", cpu=100, gpu=0)])

    assert snapshot.totals[""]["gpu"] == 0
    assert snapshot.quotas["a"].effective_min == {"gpu": 0}
    assert snapshot.quotas["a"].runtime == {"gpu": 0}
