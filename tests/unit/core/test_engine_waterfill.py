"""Water-filling, largest-remainder rounding and the shared weight, at engine level.

Every test builds real quotas fed by pods and nodes and reads the solved snapshot; ``solve`` runs
each test once with the numba kernel and once with the reference twin.
"""

from __future__ import annotations

import random

import pytest
from engine_factories import BIG, SolveFunction, node, pod, quota, runtimes

from elasticquota.api.parse import parse_quota
from elasticquota.core.keys import ANNO_SHARED_WEIGHT
from elasticquota.core.quantities.resources import ResourceList

# -- water-filling -------------------------------------------------------------------------------


def test_design_document_example_gives_5_20_35_40(solve: SolveFunction) -> None:
    """T=100; A(min 10, req 5, w 40), B(15, 20, 60), C(20, 40, 50), D(15, 70, 80).

    A lends, B/C/D borrow the pool of 45 (shares 14/12/19), B is capped at 20 and returns 9,
    which C and D share 50:80 (3/6).
    """
    specs = {"A": (10, 40), "B": (15, 60), "C": (20, 50), "D": (15, 80)}
    quotas = [
        quota(name, min={"cpu": minimum}, max={"cpu": BIG}, weight={"cpu": weight})
        for name, (minimum, weight) in specs.items()
    ]
    pods = [
        pod("a-running", "A", node="n1", cpu=3),
        pod("a-pending", "A", cpu=2),
        pod("b", "B", cpu=20),
        pod("c-1", "C", node="n2", cpu=25),
        pod("c-2", "C", cpu=15),
        pod("d", "D", cpu=70),
    ]
    nodes = [node("n1", cpu=60), node("n2", cpu=40)]

    snapshot = solve(quotas, pods, nodes)

    assert snapshot.totals[""]["cpu"] == 100
    assert runtimes(snapshot, "cpu", "A", "B", "C", "D") == {"A": 5, "B": 20, "C": 35, "D": 40}
    assert [snapshot.quotas[name].request["cpu"] for name in "ABCD"] == [5, 20, 40, 70]
    assert snapshot.problems == []


@pytest.mark.parametrize(
    ("min_and_ask", "expected"),
    [
        # Equal shares of 40 each: a reaches its request 20 and the 30 it does not need go to b.
        pytest.param(
            {"a": (10, 20), "b": (10, 200)},
            {"a": 20, "b": 80},
            id="borrower-capped-at-request-returns-excess-to-other-borrowers",
        ),
        pytest.param(
            {"small": (40, 15), "busy": (10, 500)},
            {"small": 15, "busy": 85},
            id="lending-quota-below-min-gets-exactly-its-request",
        ),
    ],
)
def test_two_quotas_with_a_min_and_a_pod_each_share_100(
    solve: SolveFunction, min_and_ask: dict[str, tuple[int, int]], expected: dict[str, int]
) -> None:
    """Two quotas (max ``BIG``), each with its min and one pod asking, on a node of 100 cpu."""
    quotas = [
        quota(name, min={"cpu": minimum}, max={"cpu": BIG})
        for name, (minimum, _) in min_and_ask.items()
    ]
    pods = [pod(f"p-{name}", name, cpu=ask) for name, (_, ask) in min_and_ask.items()]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert runtimes(snapshot, "cpu", *expected) == expected


def test_borrower_capped_at_limited_request_leaves_pool_unallocated(solve: SolveFunction) -> None:
    """b asks 200 but its max is 60: its limited request 60 is its ceiling; 20 stay in the pool."""
    quotas = [
        quota("a", min={"cpu": 10}, max={"cpu": 60}, weight={"cpu": 1}),
        quota("b", min={"cpu": 10}, max={"cpu": 60}, weight={"cpu": 1}),
    ]
    pods = [pod("pa", "a", cpu=20), pod("pb", "b", cpu=200)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert snapshot.quotas["b"].request["cpu"] == 200
    assert snapshot.quotas["b"].limited_request["cpu"] == 60
    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 20, "b": 60}


def test_weight_zero_borrower_stays_at_min_and_pool_stays_unallocated(
    solve: SolveFunction,
) -> None:
    """Nobody with a positive weight can absorb the pool: the borrower keeps its min only."""
    quotas = [
        quota(
            "a",
            min={"cpu": 10},
            max={"cpu": BIG, "memory": BIG},
            weight={"cpu": 0, "memory": 1},  # not all zero, so not replaced by max
        )
    ]
    snapshot = solve(quotas, [pod("p", "a", cpu=50)], [node("n", cpu=100)])

    assert runtimes(snapshot, "cpu", "a") == {"a": 10}


def test_weight_zero_borrower_gets_nothing_while_others_share(solve: SolveFunction) -> None:
    """b (weight 1) takes what it asks for; a (weight 0) stays at its min; 60 stay unallocated."""
    quotas = [
        quota("a", min={"cpu": 10}, max={"cpu": BIG, "memory": 1}, weight={"cpu": 0, "memory": 1}),
        quota("b", min={"cpu": 0}, max={"cpu": BIG}, weight={"cpu": 1}),
    ]
    pods = [pod("pa", "a", cpu=50), pod("pb", "b", cpu=30)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 10, "b": 30}


def test_idle_lending_quota_has_runtime_zero_not_min(solve: SolveFunction) -> None:
    """An idle quota that lends gets its request, 0, and its whole min is lent to the borrower."""
    quotas = [
        quota("idle", min={"cpu": 40}, max={"cpu": BIG}),
        quota("busy", min={"cpu": 10}, max={"cpu": BIG}),
    ]
    snapshot = solve(quotas, [pod("p", "busy", cpu=100)], [node("n", cpu=100)])

    assert snapshot.quotas["idle"].runtime == {"cpu": 0}
    assert snapshot.quotas["idle"].effective_min == {"cpu": 40}
    assert runtimes(snapshot, "cpu", "busy") == {"busy": 100}


def test_idle_non_lending_quota_keeps_its_whole_min(solve: SolveFunction) -> None:
    """allow-lent-resource=false: the request is raised to min, so the idle quota holds 40."""
    quotas = [
        quota("keeper", min={"cpu": 40}, max={"cpu": BIG}, allow_lent=False),
        quota("busy", min={"cpu": 10}, max={"cpu": BIG}),
    ]
    snapshot = solve(quotas, [pod("p", "busy", cpu=500)], [node("n", cpu=100)])

    assert runtimes(snapshot, "cpu", "keeper", "busy") == {"keeper": 40, "busy": 60}


def test_resources_are_water_filled_independently(solve: SolveFunction) -> None:
    """a borrows cpu beyond its min while being capped at its memory max (case 007)."""
    quotas = [
        quota("a", min={"cpu": 10, "memory": 10}, max={"cpu": BIG, "memory": 20}),
        quota("b", min={"cpu": 10, "memory": 10}, max={"cpu": BIG, "memory": BIG}),
    ]
    pods = [pod("pa", "a", cpu=80, memory=50), pod("pb", "b", cpu=10, memory=70)]

    snapshot = solve(quotas, pods, [node("n", cpu=100, memory=100)])

    assert snapshot.quotas["a"].runtime == {"cpu": 80, "memory": 20}
    assert snapshot.quotas["b"].runtime == {"cpu": 10, "memory": 70}


def test_runtimes_never_exceed_total_when_mins_fit(solve: SolveFunction) -> None:
    """All borrowing: the whole total is handed out, exactly, and nothing more."""
    quotas = [
        quota(name, min={"cpu": 5}, max={"cpu": BIG}, weight={"cpu": weight})
        for name, weight in (("a", 3), ("b", 7), ("c", 11))
    ]
    pods = [pod(f"p{name}", name, cpu=1000) for name in "abc"]

    snapshot = solve(quotas, pods, [node("n", cpu=101)])

    assert sum(snapshot.quotas[name].runtime["cpu"] for name in "abc") == 101


# -- largest-remainder rounding --------------------------------------------------------------------


def test_three_gpus_over_ten_equal_borrowers_go_to_the_first_three_names(
    solve: SolveFunction,
) -> None:
    """Case 004: equal remainders, ties broken by quota name ascending, not by insertion order."""
    names = [f"borrower-{index:02d}" for index in range(10)]
    shuffled = random.Random(4).sample(names, len(names))
    quotas = [quota(name, max={"gpu": 10}) for name in shuffled]
    pods = [pod(f"p-{name}", name, gpu=2) for name in shuffled]

    snapshot = solve(quotas, pods, [node("n", gpu=3)])

    expected = {name: 1 if name in names[:3] else 0 for name in names}
    assert runtimes(snapshot, "gpu", *names) == expected


def test_two_millicores_over_three_borrowers_go_to_a_and_b(solve: SolveFunction) -> None:
    """Case 016: pool 2 over a, b, c of equal weight: a and b get +1, Σ shares = 2 exactly."""
    quotas = [quota(name, min={"cpu": 10}, max={"cpu": BIG}) for name in "cba"]
    pods = [pod(f"p{name}", name, cpu=100) for name in "abc"]

    snapshot = solve(quotas, pods, [node("n", cpu=32)])

    assert runtimes(snapshot, "cpu", "a", "b", "c") == {"a": 11, "b": 11, "c": 10}


def test_leftover_unit_goes_to_largest_remainder_before_name_order(solve: SolveFunction) -> None:
    """Pool 2, weights a=2, b=1: floors 1/0, remainders 1/2 (of 3): b gets the leftover unit."""
    quotas = [
        quota("a", max={"cpu": BIG}, weight={"cpu": 2}),
        quota("b", max={"cpu": BIG}, weight={"cpu": 1}),
    ]
    pods = [pod("pa", "a", cpu=100), pod("pb", "b", cpu=100)]

    snapshot = solve(quotas, pods, [node("n", cpu=2)])

    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 1, "b": 1}


def test_shares_sum_exactly_to_the_pool_with_awkward_weights(solve: SolveFunction) -> None:
    weights = [1, 2, 3, 5, 7, 11, 13]
    names = [f"q{index}" for index in range(len(weights))]
    quotas = [
        quota(name, max={"cpu": BIG}, weight={"cpu": weight})
        for name, weight in zip(names, weights, strict=True)
    ]
    pods = [pod(f"p-{name}", name, cpu=BIG) for name in names]

    snapshot = solve(quotas, pods, [node("n", cpu=997)])

    shares = runtimes(snapshot, "cpu", *names)
    assert sum(value or 0 for value in shares.values()) == 997
    for name, weight in zip(names, weights, strict=True):
        exact = 997 * weight / sum(weights)
        assert int(exact) <= (shares[name] or 0) <= int(exact) + 1


# -- shared weight ------------------------------------------------------------------------------


def _weighted_pair(
    solve: SolveFunction, weight_a: ResourceList | None, weight_b: ResourceList | None
) -> dict[str, int | None]:
    """a (max 300) and b (max 100) both borrow a pool of 100."""
    quotas = [
        quota("a", max={"cpu": 300}, weight=weight_a),
        quota("b", max={"cpu": 100}, weight=weight_b),
    ]
    pods = [pod("pa", "a", cpu=1000), pod("pb", "b", cpu=1000)]
    return runtimes(solve(quotas, pods, [node("n", cpu=100)]), "cpu", "a", "b")


def test_shared_weight_annotation_is_used_when_present(solve: SolveFunction) -> None:
    assert _weighted_pair(solve, {"cpu": 1}, {"cpu": 1}) == {"a": 50, "b": 50}


def test_absent_shared_weight_means_max(solve: SolveFunction) -> None:
    """No annotation: weights are the maxes 300:100, so the pool of 100 splits 75/25."""
    assert _weighted_pair(solve, None, None) == {"a": 75, "b": 25}


def test_all_zero_shared_weight_means_max(solve: SolveFunction) -> None:
    assert _weighted_pair(solve, {"cpu": 0}, {}) == {"a": 75, "b": 25}


def test_unparsable_shared_weight_means_max(solve: SolveFunction) -> None:
    """An annotation that is not a ResourceList is reported and read as "use max"."""
    raw = {
        "metadata": {
            "name": "a",
            "namespace": "team",
            "annotations": {ANNO_SHARED_WEIGHT: "{not json"},
        },
        "spec": {"max": {"cpu": "300m"}},
    }
    spec, problems = parse_quota(raw)
    assert spec is not None
    assert spec.shared_weight is None
    assert any(ANNO_SHARED_WEIGHT in problem.message for problem in problems)

    quotas = [spec, quota("b", max={"cpu": 100})]
    pods = [pod("pa", "a", cpu=1000), pod("pb", "b", cpu=1000)]
    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert runtimes(snapshot, "cpu", "a", "b") == {"a": 75, "b": 25}
