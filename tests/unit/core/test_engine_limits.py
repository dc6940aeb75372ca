"""Extensions: the ``elasticquota.dev/lending-limit`` and ``elasticquota.dev/borrowing-limit``.

Lending limit LL: the request is raised to max(childRequest, min − LL), so at most LL of the unused
min is lent. Borrowing limit BL: the limited request is capped at min + BL as well as at max.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from engine_factories import BIG, SolveFunction, node, pod, quota, runtimes

from elasticquota.api.parse import parse_quota
from elasticquota.core.keys import ANNO_LENDING_LIMIT, LABEL_ALLOW_LENT
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList

NODES = [node("n", cpu=100)]


def with_hungry(specs: list[Quota], pods: list[PodInfo]) -> tuple[list[Quota], list[PodInfo]]:
    """Add a top-level quota with no min and weight 1 that takes whatever the others leave."""
    hungry = quota("hungry", max={"cpu": BIG}, weight={"cpu": 1})
    return [*specs, hungry], [*pods, pod("h", "hungry", cpu=BIG)]


def parent_over(
    min_cpu: int,
    children: Iterable[str],
    *,
    lending_limit: ResourceList | None = None,
    borrowing_limit: ResourceList | None = None,
) -> list[Quota]:
    """Parent ``p`` with a cpu min, no max and the limits given, over leaves ``children`` with no
    min and no max."""
    return [
        quota(
            "p",
            min={"cpu": min_cpu},
            max={"cpu": BIG},
            is_parent=True,
            lending_limit=lending_limit,
            borrowing_limit=borrowing_limit,
        ),
        *(quota(child, max={"cpu": BIG}, parent="p") for child in children),
    ]


# -- lending limit ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lending_limit", "asked", "expected"),
    [
        pytest.param(None, 5, 5, id="no-limit-lends-everything"),
        pytest.param(10, 5, 30, id="raised-to-min-minus-limit"),
        pytest.param(10, 35, 35, id="request-above-floor-unchanged"),
        pytest.param(0, 5, 40, id="limit-0-keeps-whole-min"),
        pytest.param(100, 5, 5, id="limit-above-min-floor-is-0"),
    ],
)
def test_lending_limit_on_a_leaf_raises_request_to_min_minus_limit(
    solve: SolveFunction, lending_limit: int | None, asked: int, expected: int
) -> None:
    """min 40: request = max(request, min − LL), never above min; the rest goes to ``hungry``."""
    limit = None if lending_limit is None else {"cpu": lending_limit}
    quotas, pods = with_hungry(
        [quota("lender", min={"cpu": 40}, max={"cpu": BIG}, lending_limit=limit)],
        [pod("p", "lender", cpu=asked)],
    )
    snapshot = solve(quotas, pods, NODES)

    assert snapshot.quotas["lender"].child_request == {"cpu": asked}
    assert snapshot.quotas["lender"].request == {"cpu": expected}
    assert runtimes(snapshot, "cpu", "lender", "hungry") == {
        "lender": expected,
        "hungry": 100 - expected,
    }


def test_lending_limit_applies_per_resource(solve: SolveFunction) -> None:
    """LL names cpu only: memory keeps lending its whole unused min."""
    quotas = [
        quota(
            "a",
            min={"cpu": 40, "memory": 40},
            max={"cpu": BIG, "memory": BIG},
            lending_limit={"cpu": 10},
        )
    ]
    result = solve(quotas, [], [node("n", cpu=100, memory=100)]).quotas["a"]

    assert result.request == {"cpu": 30, "memory": 0}
    assert result.runtime == {"cpu": 30, "memory": 0}


def _raw_quota(name: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"min": {"cpu": "40m"}, "max": {"cpu": "1"}},
    }


def test_allow_lent_false_is_the_same_as_lending_limit_zero(solve: SolveFunction) -> None:
    """The label and the annotation, parsed from real objects, give identical results."""
    by_label, _ = parse_quota(_raw_quota("q", {LABEL_ALLOW_LENT: "false"}, {}))
    by_limit, _ = parse_quota(_raw_quota("q", {}, {ANNO_LENDING_LIMIT: '{"cpu":"0"}'}))
    assert by_label is not None and by_limit is not None
    assert not by_label.allow_lent
    assert by_limit.lending_limit == {"cpu": 0}

    results = []
    for spec in (by_label, by_limit):
        quotas, pods = with_hungry([spec], [pod("p", "q", cpu=5)])
        results.append(solve(quotas, pods, NODES))

    label_result, limit_result = (snapshot.quotas["q"] for snapshot in results)
    assert label_result.request == limit_result.request == {"cpu": 40}
    assert label_result.runtime == limit_result.runtime == {"cpu": 40}
    assert results[0].quotas["hungry"].runtime == results[1].quotas["hungry"].runtime


def test_lending_limit_on_a_parent_holds_min_minus_limit_for_the_subtree(
    solve: SolveFunction,
) -> None:
    """p (min 100, LL 20) with idle children asks 80 at the root level and keeps it."""
    quotas, pods = with_hungry(parent_over(100, ["c1", "c2"], lending_limit={"cpu": 20}), [])
    snapshot = solve(quotas, pods, [node("n", cpu=200)])

    assert snapshot.quotas["p"].child_request == {"cpu": 0}
    assert snapshot.quotas["p"].request == {"cpu": 80}
    expected = {"p": 80, "hungry": 120, "c1": 0, "c2": 0}
    assert runtimes(snapshot, "cpu", *expected) == expected


def test_parent_lending_limit_floor_is_below_a_busy_subtree(solve: SolveFunction) -> None:
    """A subtree asking more than min − LL is a normal borrower: the floor does not cap it."""
    quotas, pods = with_hungry(
        parent_over(100, ["c"], lending_limit={"cpu": 20}), [pod("x", "c", cpu=90)]
    )
    snapshot = solve(quotas, pods, [node("n", cpu=200)])

    assert snapshot.quotas["p"].request == {"cpu": 90}
    assert runtimes(snapshot, "cpu", "p", "c", "hungry") == {"p": 90, "c": 90, "hungry": 110}


# -- borrowing limit ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("maximum", "expected"),
    [pytest.param(BIG, 25, id="min-plus-limit"), pytest.param(20, 20, id="max-below-it")],
)
def test_borrowing_limit_on_a_leaf_caps_the_limited_request(
    solve: SolveFunction, maximum: int, expected: int
) -> None:
    """min 10, BL 15, asks 80: it never gets more than min(max, min + BL)."""
    quotas, pods = with_hungry(
        [
            quota(
                "a",
                min={"cpu": 10},
                max={"cpu": maximum},
                weight={"cpu": 1},
                borrowing_limit={"cpu": 15},
            )
        ],
        [pod("p", "a", cpu=80)],
    )
    snapshot = solve(quotas, pods, NODES)

    assert snapshot.quotas["a"].request == {"cpu": 80}
    assert snapshot.quotas["a"].limited_request == {"cpu": expected}
    assert runtimes(snapshot, "cpu", "a", "hungry") == {"a": expected, "hungry": 100 - expected}


def test_borrowing_limit_on_a_parent_caps_the_whole_subtree(solve: SolveFunction) -> None:
    """p (min 20, BL 10): its children ask 100 together but the subtree gets min + BL = 30."""
    quotas, pods = with_hungry(
        parent_over(20, ["c1", "c2"], borrowing_limit={"cpu": 10}),
        [pod("x", "c1", cpu=50), pod("y", "c2", cpu=50)],
    )
    snapshot = solve(quotas, pods, [node("n", cpu=1000)])

    assert snapshot.quotas["p"].child_request == {"cpu": 100}
    assert snapshot.quotas["p"].limited_request == {"cpu": 30}
    expected = {"p": 30, "c1": 15, "c2": 15, "hungry": 970}
    assert runtimes(snapshot, "cpu", *expected) == expected


def test_borrowing_limit_does_not_reduce_what_min_guarantees(solve: SolveFunction) -> None:
    """BL 0: the quota can still use its whole min, just not borrow beyond it."""
    quotas, pods = with_hungry(
        [quota("a", min={"cpu": 30}, max={"cpu": BIG}, borrowing_limit={"cpu": 0})],
        [pod("p", "a", cpu=80)],
    )
    snapshot = solve(quotas, pods, NODES)

    assert runtimes(snapshot, "cpu", "a", "hungry") == {"a": 30, "hungry": 70}
