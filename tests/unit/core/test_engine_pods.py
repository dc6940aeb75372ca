"""Which pods count and how much, and which quota a pod belongs to."""

from __future__ import annotations

from typing import Any

import pytest
from engine_factories import BIG, EngineFactory, SolveFunction, node, pod, quota
from pod_bodies import container

from elasticquota.api.parse import parse_pod
from elasticquota.core.keys import (
    DEFAULT_QUOTA,
    POD_LABEL_PREEMPTIBLE,
    POD_LABEL_QUOTA,
    SYSTEM_QUOTA,
)
from elasticquota.core.model.models import PodInfo

NODES = [node("n", cpu=1000, memory=10**12)]

# -- which pods count -----------------------------------------------------------------------------


def test_request_counts_live_pods_and_used_counts_assigned_ones(solve: SolveFunction) -> None:
    """Pending pods ask (request); pods bound to a node hold (used), even before they run."""
    pods = [
        pod("pending", "a", cpu=1),
        pod("running", "a", node="n", cpu=2),
        pod("bound-not-started", "a", node="n", phase="Pending", cpu=4),
    ]
    result = solve([quota("a", max={"cpu": BIG})], pods, NODES).quotas["a"]

    assert result.request == {"cpu": 1 + 2 + 4}
    assert result.used == {"cpu": 2 + 4}


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_count_in_neither_request_nor_used(solve: SolveFunction, phase: str) -> None:
    """Deviation: the reference keeps counting them until deletion; we drop them at once."""
    pods = [
        pod("done", "a", node="n", phase=phase, preemptible=False, cpu=8),
        pod("live", "a", node="n", cpu=2),
    ]
    result = solve([quota("a", max={"cpu": BIG})], pods, NODES).quotas["a"]

    assert result.request == {"cpu": 2}
    assert result.used == {"cpu": 2}
    assert result.non_preemptible_request == {"cpu": 0}
    assert result.non_preemptible_used == {"cpu": 0}


def test_pod_finishing_releases_its_request_and_used(make_engine: EngineFactory) -> None:
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [pod("p", "a", node="n", cpu=8)])
    assert engine.solve().quotas["a"].used == {"cpu": 8}

    engine.upsert_pod(pod("p", "a", node="n", phase="Succeeded", cpu=8))
    result = engine.solve().quotas["a"]

    assert result.request == {"cpu": 0}
    assert result.used == {"cpu": 0}


def test_binding_a_pending_pod_moves_it_into_used(make_engine: EngineFactory) -> None:
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [pod("p", "a", cpu=8)])
    assert engine.solve().quotas["a"].used == {"cpu": 0}

    engine.upsert_pod(pod("p", "a", node="n", cpu=8))
    result = engine.solve().quotas["a"]

    assert result.request == {"cpu": 8}
    assert result.used == {"cpu": 8}


# -- effective request (parsed from real pod objects) ---------------------------------------------


def raw_pod(
    containers: list[dict[str, Any]],
    init_containers: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = "team",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "nodeName": "n"}
    if init_containers:
        spec["initContainers"] = init_containers
    if overhead:
        spec["overhead"] = overhead
    return {
        "metadata": {"name": "p", "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": "Running"},
    }


def parsed(raw: dict[str, Any]) -> PodInfo:
    info, problems = parse_pod(raw)
    assert problems == []
    assert isinstance(info, PodInfo)
    return info


def test_effective_request_is_max_of_containers_and_largest_init_plus_overhead(
    solve: SolveFunction,
) -> None:
    """cpu: max(100m + 200m, 500m) + 50m = 550m; memory: max(1Gi + 1Gi, 1Gi) + 0 = 2Gi."""
    raw = raw_pod(
        containers=[
            container("a", cpu="100m", memory="1Gi"),
            container("b", cpu="200m", memory="1Gi"),
        ],
        init_containers=[
            container("init-1", cpu="500m", memory="1Gi"),
            container("init-2", cpu="250m", memory="512Mi"),
        ],
        overhead={"cpu": "50m"},
        labels={POD_LABEL_QUOTA: "a"},
    )
    info = parsed(raw)
    assert info.requests == {"cpu": 550, "memory": 2 * 2**30}

    result = solve([quota("a", max={"cpu": BIG, "memory": BIG})], [info], NODES).quotas["a"]
    assert result.request == {"cpu": 550, "memory": 2 * 2**30}
    assert result.used == {"cpu": 550, "memory": 2 * 2**30}


def test_sidecar_init_container_adds_to_the_app_containers() -> None:
    """A restartable init container (sidecar) keeps running: 300m + 100m = 400m."""
    raw = raw_pod(
        containers=[container("app", cpu="300m")],
        init_containers=[container("proxy", restart_policy="Always", cpu="100m")],
    )
    assert parsed(raw).requests == {"cpu": 400}


def test_limits_default_requests() -> None:
    raw = raw_pod(
        containers=[{"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Ki"}}}]
    )
    assert parsed(raw).requests == {"cpu": 2000, "memory": 1024}


def test_preemptible_label_false_makes_the_pod_non_preemptible(solve: SolveFunction) -> None:
    raw = raw_pod(
        containers=[container("a", cpu="1")],
        labels={POD_LABEL_QUOTA: "a", POD_LABEL_PREEMPTIBLE: "false"},
    )
    result = solve([quota("a", max={"cpu": BIG})], [parsed(raw)], NODES).quotas["a"]

    assert result.non_preemptible_request == {"cpu": 1000}
    assert result.non_preemptible_used == {"cpu": 1000}


# -- pod → quota resolution -----------------------------------------------------------------------


def resolve(solve: SolveFunction, pods: list[PodInfo]) -> dict[str, str]:
    quotas = [
        quota("labelled", max={"cpu": BIG}),
        quota("team", max={"cpu": BIG}, namespace="team"),
        quota("elsewhere", max={"cpu": BIG}, namespace="ops"),
        quota("listed", max={"cpu": BIG}, namespaces=["batch", "team"]),
    ]
    return dict(solve(quotas, pods, NODES).pod_quota)


def test_label_name_wins(solve: SolveFunction) -> None:
    assert resolve(solve, [pod("p", "labelled", namespace="team", cpu=1)]) == {"team/p": "labelled"}


def test_label_alias_quota_name_is_read() -> None:
    raw = raw_pod(
        [container("a", cpu="1")], labels={"quota.scheduling.koordinator.sh/quota-name": "x"}
    )
    assert parsed(raw).quota_label == "x"


def test_quota_named_like_the_namespace_in_that_namespace(solve: SolveFunction) -> None:
    """Namespace ``team`` holds a quota named ``team``: it beats the namespaces annotation."""
    assert resolve(solve, [pod("p", namespace="team", cpu=1)]) == {"team/p": "team"}


def test_quota_named_like_the_namespace_in_another_namespace_does_not_match(
    solve: SolveFunction,
) -> None:
    """Quota ``elsewhere`` lives in namespace ``ops``: pods of namespace ``elsewhere`` are not
    its pods."""
    assert resolve(solve, [pod("p", namespace="elsewhere", cpu=1)]) == {
        "elsewhere/p": DEFAULT_QUOTA
    }


def test_namespaces_annotation(solve: SolveFunction) -> None:
    assert resolve(solve, [pod("p", namespace="batch", cpu=1)]) == {"batch/p": "listed"}


def test_unbound_pod_goes_to_the_default_quota(solve: SolveFunction) -> None:
    assert resolve(solve, [pod("p", namespace="nobody", cpu=1)]) == {"nobody/p": DEFAULT_QUOTA}


def test_unknown_label_goes_to_the_default_quota_not_to_the_namespace(
    solve: SolveFunction,
) -> None:
    """A non-empty label is the whole answer: unknown means default, even in namespace team."""
    assert resolve(solve, [pod("p", "no-such-quota", namespace="team", cpu=1)]) == {
        "team/p": DEFAULT_QUOTA
    }


def test_label_naming_the_system_quota(solve: SolveFunction) -> None:
    assert resolve(solve, [pod("p", SYSTEM_QUOTA, cpu=1)]) == {"team/p": SYSTEM_QUOTA}


# -- pods moving between quotas -------------------------------------------------------------------


def test_label_change_moves_request_and_used(make_engine: EngineFactory) -> None:
    quotas = [quota("a", max={"cpu": BIG}), quota("b", max={"cpu": BIG})]
    engine = make_engine().load(quotas, [pod("p", "a", node="n", cpu=5)], NODES)
    assert engine.solve().quotas["a"].used == {"cpu": 5}

    engine.upsert_pod(pod("p", "b", node="n", cpu=5))
    snapshot = engine.solve()

    assert snapshot.quotas["a"].request == snapshot.quotas["a"].used == {"cpu": 0}
    assert snapshot.quotas["b"].request == snapshot.quotas["b"].used == {"cpu": 5}
    assert snapshot.pod_quota["team/p"] == "b"
    assert [p.name for p in snapshot.pods_of("b")] == ["p"]


def test_pods_seen_before_their_quota_are_placed_when_it_appears(
    make_engine: EngineFactory,
) -> None:
    engine = make_engine().load([], [pod("p", "late", node="n", cpu=5)], NODES)
    snapshot = engine.solve()
    assert snapshot.pod_quota["team/p"] == DEFAULT_QUOTA
    assert snapshot.quotas[DEFAULT_QUOTA].used["cpu"] == 5

    engine.upsert_quota(quota("late", max={"cpu": BIG}))
    snapshot = engine.solve()

    assert snapshot.pod_quota["team/p"] == "late"
    assert snapshot.quotas["late"].used == {"cpu": 5}
    assert snapshot.quotas[DEFAULT_QUOTA].used["cpu"] == 0


def test_deleted_quota_pods_go_to_the_default_quota(make_engine: EngineFactory) -> None:
    quotas = [
        quota("p", max={"cpu": BIG}, is_parent=True),
        quota("c", max={"cpu": BIG}, parent="p"),
    ]
    engine = make_engine().load(quotas, [pod("x", "c", node="n", cpu=5)], NODES)
    assert engine.solve().quotas["p"].used == {"cpu": 5}

    engine.delete_quota("team", "c")
    snapshot = engine.solve()

    assert "c" not in snapshot.quotas
    assert snapshot.pod_quota["team/x"] == DEFAULT_QUOTA
    assert snapshot.quotas[DEFAULT_QUOTA].used["cpu"] == 5
    assert snapshot.quotas["p"].used == {"cpu": 0}
    assert snapshot.totals[""]["cpu"] == 1000 - 5


def test_deleted_pod_is_removed_from_its_quota(make_engine: EngineFactory) -> None:
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [pod("p", "a", node="n", cpu=5)])
    engine.delete_pod("team", "p")
    snapshot = engine.solve()

    assert snapshot.quotas["a"].request == snapshot.quotas["a"].used == {"cpu": 0}
    assert "team/p" not in snapshot.pod_quota
