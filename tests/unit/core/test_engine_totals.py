"""The distributable total at the root: nodes, reserved quotas' usage and profile trees."""

from __future__ import annotations

from engine_factories import BIG, EngineFactory, SolveFunction, node, pod, quota, runtimes

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota

TREE = "4242"


def greedy(
    name: str = "greedy", tree_id: str = "", parent: str = ROOT_QUOTA
) -> tuple[Quota, PodInfo]:
    """A quota with no min asking for everything: its runtime is exactly what its level has."""
    return (
        quota(name, max={"cpu": BIG}, tree_id=tree_id, parent=parent),
        pod(f"{name}-pod", name, cpu=BIG),
    )


def test_default_tree_total_is_sum_of_node_allocatable(solve: SolveFunction) -> None:
    spec, demand = greedy()
    snapshot = solve([spec], [demand], [node("n1", cpu=100), node("n2", cpu=50)])

    assert snapshot.totals[""] == {"cpu": 150}
    assert snapshot.quotas[ROOT_QUOTA].runtime == {"cpu": 150}
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 150}


def test_reserved_quotas_used_is_subtracted_but_not_their_pending_pods(
    solve: SolveFunction,
) -> None:
    """total − used(system) − used(default): only assigned pods of those quotas reduce it."""
    spec, demand = greedy()
    pods = [
        demand,
        pod("system-running", SYSTEM_QUOTA, node="n1", cpu=10),
        pod("system-pending", SYSTEM_QUOTA, cpu=1000),
        pod("default-running", namespace="elsewhere", node="n1", cpu=5),
        pod("default-pending", namespace="elsewhere", cpu=20),
        pod("default-done", namespace="elsewhere", node="n1", phase="Succeeded", cpu=7),
    ]
    snapshot = solve([spec], pods, [node("n1", cpu=100), node("n2", cpu=50)])

    assert snapshot.totals[""] == {"cpu": 135}
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 135}


def test_reserved_quotas_runtime_is_their_max(solve: SolveFunction) -> None:
    """They take no part in the water-fill; their runtime is reported as their max."""
    given = quota(DEFAULT_QUOTA, max={"cpu": 30}, namespace="koordinator-system")
    snapshot = solve([given], [pod("x", namespace="elsewhere", cpu=500)], [node("n", cpu=100)])

    assert snapshot.quotas[DEFAULT_QUOTA].runtime == {"cpu": 30}
    assert snapshot.quotas[DEFAULT_QUOTA].request == {"cpu": 500}
    assert snapshot.quotas[SYSTEM_QUOTA].runtime == snapshot.quotas[SYSTEM_QUOTA].max


def test_reserved_quota_usage_changes_are_picked_up(make_engine: EngineFactory) -> None:
    spec, demand = greedy()
    engine = make_engine().load([spec], [demand], [node("n", cpu=100)])
    engine.upsert_pod(pod("sys", SYSTEM_QUOTA, node="n", cpu=30))
    assert runtimes(engine.solve(), "cpu", "greedy") == {"greedy": 70}

    engine.delete_pod("team", "sys")
    assert runtimes(engine.solve(), "cpu", "greedy") == {"greedy": 100}


def test_node_update_applies_the_delta_and_delete_subtracts(make_engine: EngineFactory) -> None:
    spec, demand = greedy()
    engine = make_engine().load([spec], [demand], [node("n1", cpu=100), node("n2", cpu=50)])
    assert engine.solve().totals[""] == {"cpu": 150}

    engine.upsert_node(node("n1", cpu=120))
    snapshot = engine.solve()
    assert snapshot.totals[""] == {"cpu": 170}
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 170}

    engine.upsert_node(node("n1", cpu=120))  # an unchanged update counts once
    assert engine.solve().totals[""] == {"cpu": 170}

    engine.delete_node("n2")
    snapshot = engine.solve()
    assert snapshot.totals[""] == {"cpu": 120}
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 120}


def test_resource_no_node_has_is_absent_from_the_default_total(solve: SolveFunction) -> None:
    """Keys of the reserved quotas' usage do not make a resource present in the total."""
    spec, demand = greedy()
    snapshot = solve([spec], [demand], [node("n", cpu=100)])

    assert snapshot.totals[""] == {"cpu": 100}


def test_deleting_the_last_node_with_a_resource_removes_it_from_the_total(
    make_engine: EngineFactory,
) -> None:
    """Same objects, same total: after the delete, gpu is absent, as for a fresh engine."""
    spec, demand = greedy()
    engine = make_engine().load([spec], [demand], [node("cpu", cpu=100), node("gpu", gpu=4)])
    assert engine.solve().totals[""] == {"cpu": 100, "gpu": 4}

    engine.delete_node("gpu")

    assert engine.solve().totals[""] == {"cpu": 100}


def profile_root(
    name: str = "pool-root",
    total: dict[str, int] | None = None,
    *,
    ignore_default_tree: bool = False,
) -> Quota:
    """The root quota a profile controller writes: is-root, tree id and total-resource."""
    total = total if total is not None else {"cpu": 300}
    return quota(
        name,
        min=dict(total),
        max={"cpu": BIG},
        tree_id=TREE,
        is_root=True,
        is_parent=True,
        total=total,
        ignore_default_tree=ignore_default_tree,
    )


def test_profile_tree_total_is_its_root_total_resource(solve: SolveFunction) -> None:
    """The profile tree distributes the annotation verbatim; its children share it."""
    child, child_demand = greedy("pool-team", tree_id=TREE, parent="pool-root")
    snapshot = solve([profile_root(), child], [child_demand], [node("n", cpu=1000)])

    assert snapshot.totals[TREE] == {"cpu": 300}
    assert snapshot.quotas["pool-root"].tree == TREE
    assert snapshot.quotas["pool-team"].tree == TREE
    assert runtimes(snapshot, "cpu", "pool-root", "pool-team") == {
        "pool-root": 300,
        "pool-team": 300,
    }


def test_profile_tree_total_is_taken_out_of_the_default_tree(solve: SolveFunction) -> None:
    spec, demand = greedy()
    snapshot = solve([spec, profile_root()], [demand], [node("n", cpu=1000)])

    assert snapshot.totals[""] == {"cpu": 700}
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 700}


def test_ignore_default_tree_keeps_the_default_total(solve: SolveFunction) -> None:
    spec, demand = greedy()
    root = profile_root(ignore_default_tree=True)
    snapshot = solve([spec, root], [demand], [node("n", cpu=1000)])

    assert snapshot.totals[""] == {"cpu": 1000}
    assert snapshot.totals[TREE] == {"cpu": 300}


def test_deleting_the_profile_root_gives_its_total_back(make_engine: EngineFactory) -> None:
    """Case 030."""
    spec, demand = greedy()
    engine = make_engine().load([spec, profile_root()], [demand], [node("n", cpu=1000)])
    assert engine.solve().totals[""] == {"cpu": 700}

    engine.delete_quota("team", "pool-root")
    snapshot = engine.solve()

    assert snapshot.totals[""] == {"cpu": 1000}
    assert TREE not in snapshot.totals
    assert runtimes(snapshot, "cpu", "greedy") == {"greedy": 1000}


def test_profile_tree_total_is_not_reduced_by_nodes_or_reserved_usage(
    make_engine: EngineFactory,
) -> None:
    """Nodes only ever feed the default tree; a node change leaves the profile tree alone."""
    engine = make_engine().load([profile_root()], [], [node("n", cpu=1000)])
    engine.upsert_pod(pod("sys", SYSTEM_QUOTA, node="n", cpu=100))
    engine.upsert_node(node("m", cpu=5))

    snapshot = engine.solve()

    assert snapshot.totals[TREE] == {"cpu": 300}
    assert snapshot.totals[""] == {"cpu": 1000 + 5 - 300 - 100}


def test_total_resource_counts_only_on_an_is_root_quota(solve: SolveFunction) -> None:
    """The reference reads total-resource only from a quota labelled is-root=true: without the
    label the profile tree has no total and the default tree keeps everything."""
    not_root = quota("pool-root", max={"cpu": BIG}, tree_id=TREE, total={"cpu": 300})
    spec, demand = greedy()

    snapshot = solve([spec, not_root], [demand], [node("n", cpu=1000)])

    assert snapshot.totals[TREE] == {}
    assert snapshot.totals[""] == {"cpu": 1000}
    assert any("is-root" in problem.message for problem in snapshot.problems)
