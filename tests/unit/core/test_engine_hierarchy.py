"""Hierarchy: each parent's runtime is water-filled among its children, top-down."""

from __future__ import annotations

from engine_factories import BIG, SolveFunction, node, pod, quota, runtimes

from elasticquota.core.keys import ROOT_QUOTA


def test_multi_level_tree_is_filled_top_down(solve: SolveFunction) -> None:
    """root 100 → eng (min 60) and ops (min 40); eng 60 → web (min 20) and batch (min 40).

    ops is idle and lends its 40: eng borrows it all (100). Inside eng, web asks 30 (borrows 10
    over its min) and batch 100: batch borrows the rest, 70.
    """
    quotas = [
        quota("eng", min={"cpu": 60}, max={"cpu": BIG}, is_parent=True),
        quota("ops", min={"cpu": 40}, max={"cpu": BIG}),
        quota("web", min={"cpu": 20}, max={"cpu": BIG}, parent="eng"),
        quota("batch", min={"cpu": 40}, max={"cpu": BIG}, parent="eng"),
    ]
    pods = [pod("w", "web", cpu=30), pod("b", "batch", cpu=100)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    assert snapshot.quotas["eng"].request == {"cpu": 130}
    expected = {"eng": 100, "ops": 0, "web": 30, "batch": 70}
    assert runtimes(snapshot, "cpu", *expected) == expected
    assert snapshot.ancestors("web") == ["eng"]


def test_three_levels_deep(solve: SolveFunction) -> None:
    quotas = [
        quota("org", max={"cpu": BIG}, is_parent=True),
        quota("dept", max={"cpu": 80}, parent="org", is_parent=True),
        quota("team", max={"cpu": BIG}, parent="dept"),
        quota("other", max={"cpu": BIG}, parent="org"),
    ]
    pods = [pod("t", "team", cpu=BIG), pod("o", "other", cpu=10)]

    snapshot = solve(quotas, pods, [node("n", cpu=100)])

    expected = {"org": 90, "dept": 80, "team": 80, "other": 10}
    assert runtimes(snapshot, "cpu", *expected) == expected


def test_root_distributes_the_union_of_max_keys_of_the_tree(solve: SolveFunction) -> None:
    """a names cpu, b names gpu: the root distributes both, so both runtimes carry both keys;
    memory, in the cluster but in no quota's max, is not distributed."""
    quotas = [quota("a", max={"cpu": BIG}), quota("b", max={"gpu": 8})]
    pods = [pod("pa", "a", cpu=10), pod("pb", "b", gpu=3)]

    snapshot = solve(quotas, pods, [node("n", cpu=100, memory=100, gpu=4)])

    assert snapshot.quotas["a"].runtime == {"cpu": 10, "gpu": 0}
    assert snapshot.quotas["b"].runtime == {"cpu": 0, "gpu": 3}


def test_root_distributes_keys_only_a_deeper_quota_names(solve: SolveFunction) -> None:
    """gpu appears only in a grandchild's max, yet the root level distributes it."""
    quotas = [
        quota("p", max={"cpu": BIG}, is_parent=True),
        quota("c", max={"cpu": BIG, "gpu": 8}, parent="p"),
    ]
    snapshot = solve(quotas, [pod("x", "c", gpu=1)], [node("n", cpu=100, gpu=4)])

    assert set(snapshot.quotas["p"].runtime) == {"cpu", "gpu"}


def test_child_runtime_has_only_its_parents_max_keys(solve: SolveFunction) -> None:
    """c's max has gpu but p's does not: p's level does not distribute gpu, c has no gpu runtime
    (a missing key is not limited)."""
    quotas = [
        quota("p", max={"cpu": BIG}, is_parent=True),
        quota("c", max={"cpu": BIG, "gpu": 8}, parent="p"),
    ]
    snapshot = solve(quotas, [pod("x", "c", cpu=10, gpu=2)], [node("n", cpu=100, gpu=4)])

    assert snapshot.quotas["c"].runtime == {"cpu": 10}
    assert "gpu" not in snapshot.quotas["c"].runtime
    assert snapshot.quotas["c"].request == {"cpu": 10, "gpu": 2}


def test_parent_own_pods_enter_child_request_but_runtime_goes_to_children(
    solve: SolveFunction,
) -> None:
    """p (max 70) runs 30 itself, its children ask 40 each: p asks 110, gets 70, and the whole 70
    is split among the children; p's own pods are not subtracted."""
    quotas = [
        quota("p", max={"cpu": 70}, is_parent=True),
        quota("c1", max={"cpu": BIG}, parent="p"),
        quota("c2", max={"cpu": BIG}, parent="p"),
    ]
    pods = [pod("own", "p", cpu=30), pod("x", "c1", cpu=40), pod("y", "c2", cpu=40)]

    snapshot = solve(quotas, pods, [node("n", cpu=1000)])

    assert snapshot.quotas["p"].child_request == {"cpu": 110}
    assert snapshot.quotas["p"].runtime == {"cpu": 70}
    assert runtimes(snapshot, "cpu", "c1", "c2") == {"c1": 35, "c2": 35}


def test_siblings_share_only_their_parents_runtime(solve: SolveFunction) -> None:
    """p is capped at its max 50; its two hungry children share 50, not the cluster's 1000."""
    quotas = [
        quota("p", max={"cpu": 50}, is_parent=True),
        quota("c1", max={"cpu": BIG}, parent="p", weight={"cpu": 1}),
        quota("c2", max={"cpu": BIG}, parent="p", weight={"cpu": 4}),
    ]
    pods = [pod("x", "c1", cpu=BIG), pod("y", "c2", cpu=BIG)]

    snapshot = solve(quotas, pods, [node("n", cpu=1000)])

    assert runtimes(snapshot, "cpu", "c1", "c2") == {"c1": 10, "c2": 40}


def test_root_result_reports_the_distributable_total(solve: SolveFunction) -> None:
    snapshot = solve([quota("a", max={"cpu": BIG})], [], [node("n", cpu=100)])

    root = snapshot.quotas[ROOT_QUOTA]
    assert root.runtime == {"cpu": 100}
    assert root.reserved
