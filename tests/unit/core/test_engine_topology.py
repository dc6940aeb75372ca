"""Structural problems: a broken quota and its descendants are left out of the tree with a Problem
naming the object and the rule; their pods go to the default quota; the rest is still computed."""

from __future__ import annotations

from engine_factories import BIG, EngineFactory, SolveFunction, node, pod, quota, runtimes

from elasticquota.core.keys import DEFAULT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.results import Snapshot

NODES = [node("n", cpu=100)]


def healthy() -> tuple[list[Quota], list[PodInfo]]:
    """A sound quota next to the broken ones: it must still get its runtime."""
    return [quota("healthy", min={"cpu": 10}, max={"cpu": BIG}, weight={"cpu": 1})], [
        pod("h", "healthy", cpu=30)
    ]


def problems_of(snapshot: Snapshot, name: str, namespace: str = "team") -> list[Problem]:
    return [p for p in snapshot.problems if p.object == f"ElasticQuota {namespace}/{name}"]


def assert_left_out(snapshot: Snapshot, name: str, rule: str, namespace: str = "team") -> None:
    found = problems_of(snapshot, name, namespace)
    assert found, f"no problem reported for {name}: {snapshot.problems}"
    assert any(rule in problem.message for problem in found), found
    assert all("left out" in problem.message for problem in found)


def assert_rest_is_computed(snapshot: Snapshot) -> None:
    assert runtimes(snapshot, "cpu", "healthy") == {"healthy": 30}


def test_missing_parent(solve: SolveFunction) -> None:
    quotas, pods = healthy()
    quotas += [
        quota("orphan", max={"cpu": BIG}, parent="ghost", is_parent=True),
        quota("grandchild", max={"cpu": BIG}, parent="orphan"),
    ]
    pods += [pod("o", "orphan", cpu=5), pod("g", "grandchild", cpu=7)]

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "orphan", "parent quota 'ghost' does not exist")
    assert_left_out(snapshot, "grandchild", "ancestor quota 'orphan'")
    assert "orphan" not in snapshot.quotas and "grandchild" not in snapshot.quotas
    assert snapshot.pod_quota["team/o"] == DEFAULT_QUOTA
    assert snapshot.pod_quota["team/g"] == DEFAULT_QUOTA
    assert snapshot.quotas[DEFAULT_QUOTA].request["cpu"] == 12
    assert_rest_is_computed(snapshot)


def test_a_reserved_parent_is_named_as_reserved_not_as_missing(solve: SolveFunction) -> None:
    """The default and system quotas exist (the operator creates them) but cannot have
    children: "does not exist" sent the reader looking for an object that is there."""
    quotas, pods = healthy()
    for reserved in (DEFAULT_QUOTA, SYSTEM_QUOTA):
        quotas.append(quota(f"under-{reserved}", max={"cpu": BIG}, parent=reserved))

    snapshot = solve(quotas, pods, NODES)

    for reserved in (DEFAULT_QUOTA, SYSTEM_QUOTA):
        rule = f"parent quota {reserved!r} is a reserved quota, which cannot have children"
        assert_left_out(snapshot, f"under-{reserved}", rule)
    assert_rest_is_computed(snapshot)


def test_parent_not_marked_is_parent(solve: SolveFunction) -> None:
    quotas, pods = healthy()
    quotas += [
        quota("leaf", max={"cpu": BIG}),
        quota("child", max={"cpu": BIG}, parent="leaf"),
    ]
    pods += [pod("l", "leaf", cpu=5), pod("c", "child", cpu=7)]

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "child", "is-parent")
    assert problems_of(snapshot, "leaf") == []
    assert "leaf" in snapshot.quotas
    assert snapshot.pod_quota["team/c"] == DEFAULT_QUOTA
    assert snapshot.quotas["leaf"].request == {"cpu": 5}
    assert_rest_is_computed(snapshot)


def test_cycle(solve: SolveFunction) -> None:
    quotas, pods = healthy()
    quotas += [
        quota("x", max={"cpu": BIG}, parent="y", is_parent=True),
        quota("y", max={"cpu": BIG}, parent="x", is_parent=True),
        quota("below", max={"cpu": BIG}, parent="x"),
    ]
    pods += [pod("b", "below", cpu=5)]

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "x", "cycle")
    assert_left_out(snapshot, "y", "cycle")
    assert_left_out(snapshot, "below", "ancestor quota 'x'")
    assert snapshot.pod_quota["team/b"] == DEFAULT_QUOTA
    assert_rest_is_computed(snapshot)


def test_self_parent_is_a_cycle(solve: SolveFunction) -> None:
    quotas, pods = healthy()
    quotas.append(quota("self", max={"cpu": BIG}, parent="self", is_parent=True))

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "self", "cycle")
    assert_rest_is_computed(snapshot)


def test_duplicated_name_keeps_the_oldest(solve: SolveFunction) -> None:
    """Names are global: the younger duplicate is left out, its namespace's pods go to default."""
    quotas, pods = healthy()
    quotas += [
        quota("dup", max={"cpu": 40}, namespace="dup", created="2024-02-01T00:00:00Z"),
        quota("dup", max={"cpu": 50}, namespace="other", created="2024-01-01T00:00:00Z"),
    ]
    pods += [pod("by-namespace", namespace="dup", cpu=5), pod("by-label", "dup", cpu=7)]

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "dup", "already used by ElasticQuota other/dup", namespace="dup")
    assert problems_of(snapshot, "dup", namespace="other") == []
    assert snapshot.quotas["dup"].namespace == "other"
    assert snapshot.quotas["dup"].max == {"cpu": 50}
    assert snapshot.pod_quota["dup/by-namespace"] == DEFAULT_QUOTA
    assert snapshot.pod_quota["team/by-label"] == "dup"
    assert_rest_is_computed(snapshot)


def test_tree_id_conflict_with_the_parent(solve: SolveFunction) -> None:
    quotas, pods = healthy()
    quotas += [
        quota("p", max={"cpu": BIG}, is_parent=True),
        quota("stray", max={"cpu": BIG}, parent="p", tree_id="other-tree", is_parent=True),
        quota("under-stray", max={"cpu": BIG}, parent="stray"),
        quota("inherits", max={"cpu": BIG}, parent="p"),
    ]
    pods += [pod("s", "stray", cpu=5), pod("u", "under-stray", cpu=1), pod("i", "inherits", cpu=2)]

    snapshot = solve(quotas, pods, NODES)

    assert_left_out(snapshot, "stray", "tree id 'other-tree' differs from parent quota 'p'")
    assert_left_out(snapshot, "under-stray", "ancestor quota 'stray'")
    assert snapshot.pod_quota["team/s"] == DEFAULT_QUOTA
    assert snapshot.pod_quota["team/u"] == DEFAULT_QUOTA
    assert snapshot.quotas["inherits"].tree == ""
    assert snapshot.quotas["p"].child_request == {"cpu": 2}
    assert "other-tree" not in snapshot.totals
    assert_rest_is_computed(snapshot)


def test_child_without_tree_id_inherits_its_parents(solve: SolveFunction) -> None:
    quotas = [
        quota(
            "root", max={"cpu": BIG}, tree_id="t", is_root=True, is_parent=True, total={"cpu": 9}
        ),
        quota("kid", max={"cpu": BIG}, parent="root"),
    ]
    snapshot = solve(quotas, [pod("k", "kid", cpu=100)], NODES)

    assert snapshot.problems == []
    assert snapshot.quotas["kid"].tree == "t"
    assert runtimes(snapshot, "cpu", "kid") == {"kid": 9}


def test_profile_tree_without_total_resource_is_reported(solve: SolveFunction) -> None:
    quotas = [quota("lonely", max={"cpu": BIG}, tree_id="t")]
    snapshot = solve(quotas, [pod("x", "lonely", cpu=5)], NODES)

    assert any("total-resource" in problem.message for problem in problems_of(snapshot, "lonely"))
    assert snapshot.totals["t"] == {}
    assert runtimes(snapshot, "cpu", "lonely") == {"lonely": 0}


def test_fixing_the_problem_brings_the_quota_back(make_engine: EngineFactory) -> None:
    engine = make_engine().load(
        [quota("child", max={"cpu": BIG}, parent="later")], [pod("c", "child", cpu=5)], NODES
    )
    assert engine.solve().pod_quota["team/c"] == DEFAULT_QUOTA

    engine.upsert_quota(quota("later", max={"cpu": BIG}, is_parent=True))
    snapshot = engine.solve()

    assert snapshot.problems == []
    assert snapshot.pod_quota["team/c"] == "child"
    assert snapshot.quotas["later"].request == {"cpu": 5}


def test_duplicate_problems_do_not_depend_on_input_order(solve: SolveFunction) -> None:
    """Problems come in name order, whatever order the quotas arrive in."""
    quotas = [
        quota("zeta", max={"cpu": 1}, namespace="one"),
        quota("zeta", max={"cpu": 1}, namespace="two"),
        quota("alpha", max={"cpu": 1}, namespace="one"),
        quota("alpha", max={"cpu": 1}, namespace="two"),
    ]
    forward = solve(quotas, [], NODES).problems
    backward = solve(quotas[::-1], [], NODES).problems

    assert forward == backward
    assert [problem.object for problem in forward] == [
        "ElasticQuota two/alpha",
        "ElasticQuota two/zeta",
    ]


def test_duplicated_default_quota_keeps_the_oldest_whatever_the_order(
    solve: SolveFunction,
) -> None:
    older = quota(DEFAULT_QUOTA, max={"cpu": 7}, namespace="b", created="2024-01-01T00:00:00Z")
    newer = quota(DEFAULT_QUOTA, max={"cpu": 9}, namespace="a", created="2024-03-01T00:00:00Z")

    for quotas in ([older, newer], [newer, older]):
        snapshot = solve(quotas, [], NODES)
        assert snapshot.quotas[DEFAULT_QUOTA].max == {"cpu": 7}
        assert snapshot.quotas[DEFAULT_QUOTA].runtime == {"cpu": 7}
        assert_left_out(snapshot, DEFAULT_QUOTA, "already used by ElasticQuota b/", namespace="a")
