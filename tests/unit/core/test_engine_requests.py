"""Request aggregation, bottom-up: self request, child request, request, limited request."""

from __future__ import annotations

from engine_factories import BIG, SolveFunction, node, pod, quota

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA

NODES = [node("n", cpu=1000, memory=1000, gpu=8)]


def test_self_request_is_masked_to_the_keys_of_max(solve: SolveFunction) -> None:
    """Resources the quota's max does not name are not tracked for it at all."""
    quotas = [quota("a", min={"cpu": 10}, max={"cpu": 100})]
    pods = [pod("p", "a", node="n", cpu=5, memory=7, gpu=1)]

    result = solve(quotas, pods, NODES).quotas["a"]

    assert result.request == {"cpu": 5}
    assert result.child_request == {"cpu": 5}
    assert result.used == {"cpu": 5}
    assert set(result.runtime) == {"cpu"}


def test_child_request_is_own_pods_plus_childrens_limited_requests(solve: SolveFunction) -> None:
    """P's own 7 + c1's request 30 capped to its max 10 + c2's 20 = 37."""
    quotas = [
        quota("p", max={"cpu": BIG}, is_parent=True),
        quota("c1", max={"cpu": 10}, parent="p"),
        quota("c2", max={"cpu": 50}, parent="p"),
    ]
    pods = [pod("own", "p", cpu=7), pod("x", "c1", cpu=30), pod("y", "c2", cpu=20)]

    snapshot = solve(quotas, pods, NODES)

    assert snapshot.quotas["c1"].request == {"cpu": 30}
    assert snapshot.quotas["c1"].limited_request == {"cpu": 10}
    assert snapshot.quotas["p"].child_request == {"cpu": 37}
    assert snapshot.quotas["p"].request == {"cpu": 37}


def test_request_of_lending_quota_is_its_child_request(solve: SolveFunction) -> None:
    quotas = [quota("a", min={"cpu": 40}, max={"cpu": 100})]
    result = solve(quotas, [pod("p", "a", cpu=10)], NODES).quotas["a"]

    assert result.child_request == result.request == {"cpu": 10}


def test_not_lending_quota_request_is_raised_to_min_on_min_keys_only(
    solve: SolveFunction,
) -> None:
    """allow-lent-resource=false: cpu (in min) is raised to 40, memory (not in min) is not."""
    quotas = [
        quota("a", min={"cpu": 40}, max={"cpu": 100, "memory": 100}, allow_lent=False),
    ]
    result = solve(quotas, [pod("p", "a", cpu=10, memory=10)], NODES).quotas["a"]

    assert result.child_request == {"cpu": 10, "memory": 10}
    assert result.request == {"cpu": 40, "memory": 10}
    assert result.limited_request == {"cpu": 40, "memory": 10}


def test_not_lending_quota_request_above_min_is_unchanged(solve: SolveFunction) -> None:
    quotas = [quota("a", min={"cpu": 40}, max={"cpu": 100}, allow_lent=False)]
    result = solve(quotas, [pod("p", "a", cpu=60)], NODES).quotas["a"]

    assert result.request == {"cpu": 60}


def test_idle_not_lending_quota_requests_its_min(solve: SolveFunction) -> None:
    quotas = [quota("a", min={"cpu": 40}, max={"cpu": 100}, allow_lent=False)]
    result = solve(quotas, [], NODES).quotas["a"]

    assert result.child_request == {"cpu": 0}
    assert result.request == {"cpu": 40}


def test_limited_request_is_request_capped_at_max(solve: SolveFunction) -> None:
    quotas = [quota("a", max={"cpu": 100, "memory": 50})]
    result = solve(quotas, [pod("p", "a", cpu=150, memory=20)], NODES).quotas["a"]

    assert result.request == {"cpu": 150, "memory": 20}
    assert result.limited_request == {"cpu": 100, "memory": 20}


def test_limited_request_passes_keys_not_in_max_through(solve: SolveFunction) -> None:
    """c tracks gpu, its parent's max has no gpu: p's limited request keeps c's gpu uncapped."""
    quotas = [
        quota("p", max={"cpu": 100}, is_parent=True),
        quota("c", max={"cpu": 100, "gpu": 8}, parent="p"),
    ]
    snapshot = solve(quotas, [pod("x", "c", cpu=10, gpu=3)], NODES)

    assert snapshot.quotas["p"].child_request == {"cpu": 10, "gpu": 3}
    assert snapshot.quotas["p"].limited_request == {"cpu": 10, "gpu": 3}


def test_not_lending_min_key_outside_max_passes_through_uncapped(solve: SolveFunction) -> None:
    """A min key the max lacks is raised to min (step 3) and not capped (step 4)."""
    quotas = [quota("a", min={"cpu": 10, "gpu": 2}, max={"cpu": 100}, allow_lent=False)]
    result = solve(quotas, [], NODES).quotas["a"]

    assert result.request == {"cpu": 10, "gpu": 2}
    assert result.limited_request == {"cpu": 10, "gpu": 2}


def test_parent_request_is_uncapped_but_its_parent_sees_the_limited_request(
    solve: SolveFunction,
) -> None:
    """p's request 70 is above its max 50: annotation 70, limited 50, what the root level sees."""
    quotas = [
        quota("p", max={"cpu": 50}, is_parent=True),
        quota("c1", max={"cpu": 100}, parent="p"),
        quota("c2", max={"cpu": 100}, parent="p"),
    ]
    pods = [pod("x", "c1", cpu=40), pod("y", "c2", cpu=30)]

    snapshot = solve(quotas, pods, NODES)

    assert snapshot.quotas["p"].request == {"cpu": 70}
    assert snapshot.quotas["p"].limited_request == {"cpu": 50}
    assert snapshot.quotas["p"].runtime == {"cpu": 50}
    assert snapshot.quotas[ROOT_QUOTA].child_request == {"cpu": 50}


def test_non_preemptible_request_and_used_are_plain_sums(solve: SolveFunction) -> None:
    """Non-preemptible sums are neither capped at max nor raised to min; used only when bound."""
    quotas = [
        quota("p", min={"cpu": 60}, max={"cpu": 100}, is_parent=True, allow_lent=False),
        quota("c", max={"cpu": 10}, parent="p"),
    ]
    pods = [
        pod("np-running", "c", node="n", preemptible=False, cpu=20),
        pod("np-pending", "c", preemptible=False, cpu=10),
        pod("preemptible", "c", node="n", cpu=5),
    ]
    snapshot = solve(quotas, pods, NODES)

    child, parent = snapshot.quotas["c"], snapshot.quotas["p"]
    assert child.limited_request == {"cpu": 10}
    assert child.non_preemptible_request == {"cpu": 30}
    assert child.non_preemptible_used == {"cpu": 20}
    assert child.used == {"cpu": 25}
    assert parent.request == {"cpu": 60}
    assert parent.non_preemptible_request == {"cpu": 30}
    assert parent.non_preemptible_used == {"cpu": 20}
    assert parent.used == {"cpu": 25}


def test_used_propagates_to_ancestors_uncapped(solve: SolveFunction) -> None:
    quotas = [
        quota("p", max={"cpu": 10}, is_parent=True),
        quota("c", max={"cpu": 10}, parent="p"),
    ]
    snapshot = solve(quotas, [pod("x", "c", node="n", cpu=25)], NODES)

    assert snapshot.quotas["c"].used == {"cpu": 25}
    assert snapshot.quotas["p"].used == {"cpu": 25}


def test_root_request_and_used_include_system_and_default_quotas(solve: SolveFunction) -> None:
    """Case 023: the virtual root aggregates the whole default tree, reserved quotas included."""
    quotas = [quota("a", max={"cpu": 100})]
    pods = [
        pod("in-a", "a", node="n", cpu=10),
        pod("unbound", namespace="elsewhere", node="n", cpu=5),
        pod("unbound-pending", namespace="elsewhere", cpu=2),
        pod("system", SYSTEM_QUOTA, node="n", cpu=3),
    ]
    snapshot = solve(quotas, pods, NODES)

    assert snapshot.quotas[DEFAULT_QUOTA].request == {"cpu": 7, "memory": 0}
    assert snapshot.quotas[SYSTEM_QUOTA].used == {"cpu": 3, "memory": 0}
    root = snapshot.quotas[ROOT_QUOTA]
    assert root.request["cpu"] == 10 + 5 + 2 + 3
    assert root.used["cpu"] == 10 + 5 + 3
