"""The PreFilter admission check on hand-made snapshots.

Numbers are in engine units: cpu in millicores, memory in bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine_factories import quota_result

from elasticquota.core.decisions.admission import Verdict, check_pod
from elasticquota.core.decisions.gating import pending_verdicts
from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.results import QuotaResult, Snapshot

GI = 1024**3


def quota(
    name: str,
    *,
    parent: str = ROOT_QUOTA,
    min: ResourceList | None = None,
    max: ResourceList | None = None,
    effective_min: ResourceList | None = None,
    used: ResourceList | None = None,
    runtime: ResourceList | None = None,
    np_used: ResourceList | None = None,
    reserved: bool = False,
) -> QuotaResult:
    """The figures admission reads; the effective min is the min unless given."""
    return quota_result(
        name,
        parent=parent,
        reserved=reserved,
        min=min or {},
        max=max or {},
        effective_min=effective_min if effective_min is not None else (min or {}),
        shared_weight=max or {},
        used=used or {},
        runtime=runtime or {},
        non_preemptible_used=np_used or {},
    )


def cpu_team(
    *, min: int, used: int = 0, np_used: int = 0, effective_min: int | None = None
) -> QuotaResult:
    """Quota ``team`` with cpu only: max and runtime 8 cores, ``used`` of which ``np_used`` by
    non-preemptible pods."""
    return quota(
        "team",
        min={"cpu": min},
        effective_min=None if effective_min is None else {"cpu": effective_min},
        max={"cpu": 8000},
        used={"cpu": used},
        runtime={"cpu": 8000},
        np_used={"cpu": np_used},
    )


def pod(
    name: str,
    *,
    preemptible: bool = True,
    node: str = "",
    phase: str = "Pending",
    **requests: int,
) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        requests={key.replace("_", "/"): value for key, value in requests.items()},
        preemptible=preemptible,
        node_name=node,
        phase=phase,
    )


def snapshot(quotas: Iterable[QuotaResult], placed: Iterable[tuple[PodInfo, str]]) -> Snapshot:
    placed = list(placed)
    by_quota: dict[str, list[PodInfo]] = {}
    for item, name in sorted(placed, key=lambda pair: pair[0].key):
        by_quota.setdefault(name, []).append(item)
    return Snapshot(
        quotas={result.name: result for result in quotas},
        totals={"": {}},
        pods={item.key: item for item, _ in placed},
        pod_quota={item.key: name for item, name in placed},
        pods_by_quota=by_quota,
    )


def verdict_for(result: QuotaResult, item: PodInfo) -> Verdict:
    state = snapshot([result], [(item, result.name)])
    return check_pod(state, item)


# -- used + request <= runtime ----------------------------------------------------------------


def test_a_pod_that_fills_the_runtime_exactly_fits() -> None:
    team = quota("team", max={"cpu": 8000}, used={"cpu": 3000}, runtime={"cpu": 5000})
    verdict = verdict_for(team, pod("p", cpu=2000))
    assert verdict.admitted
    assert verdict.reason == "fits in quota team"
    assert verdict.quota == "team"
    assert verdict.pod == "ns/p"


def test_a_pod_beyond_the_runtime_waits_and_the_reason_names_quota_resource_and_numbers() -> None:
    team = quota("team", max={"cpu": 8000}, used={"cpu": 3000}, runtime={"cpu": 4500})
    verdict = verdict_for(team, pod("p", cpu=2000))
    assert not verdict.admitted
    assert verdict.reason == "quota team: cpu used 3 + request 2 > runtime 4500m"
    (shortfall,) = verdict.shortfalls
    assert (shortfall.quota, shortfall.resource, shortfall.limit_name) == ("team", "cpu", "runtime")
    assert (shortfall.used, shortfall.request, shortfall.limit) == (3000, 2000, 4500)


def test_every_blocking_resource_is_named_sorted_by_resource() -> None:
    team = quota(
        "team",
        max={"cpu": 8000, "memory": 8 * GI},
        used={"cpu": 1000, "memory": 4 * GI},
        runtime={"cpu": 2000, "memory": 5 * GI},
    )
    verdict = verdict_for(team, pod("p", cpu=2000, memory=2 * GI))
    assert verdict.reason == (
        "quota team: cpu used 1 + request 2 > runtime 2; "
        "quota team: memory used 4Gi + request 2Gi > runtime 5Gi"
    )


def test_the_request_is_masked_to_the_quota_max_keys() -> None:
    # The quota does not track GPUs: a GPU request is not limited by its (zero) GPU runtime.
    team = quota(
        "team",
        max={"cpu": 8000},
        used={"cpu": 0},
        runtime={"cpu": 4000, "nvidia.com/gpu": 0},
    )
    assert verdict_for(team, pod("p", cpu=1000, nvidia_com_gpu=4)).admitted


def test_a_resource_missing_from_the_runtime_does_not_block() -> None:
    team = quota(
        "team",
        max={"cpu": 8000, "memory": 8 * GI},
        used={"cpu": 0, "memory": 0},
        runtime={"cpu": 4000},
    )
    assert verdict_for(team, pod("p", cpu=1000, memory=64 * GI)).admitted


def test_an_over_used_resource_the_pod_does_not_request_still_blocks_it() -> None:
    # The reference adds the request to the whole used list before comparing (used + req).
    team = quota(
        "team",
        max={"cpu": 8000, "memory": 8 * GI},
        used={"cpu": 0, "memory": 6 * GI},
        runtime={"cpu": 4000, "memory": 5 * GI},
    )
    verdict = verdict_for(team, pod("p", cpu=1000))
    assert not verdict.admitted
    assert verdict.reason == "quota team: memory used 6Gi + request 0 > runtime 5Gi"


# -- non-preemptible pods must also fit in min -----------------------------------------------


def test_a_non_preemptible_pod_must_fit_within_min() -> None:
    team = cpu_team(min=2000, used=1000, np_used=1000)
    verdict = verdict_for(team, pod("p", preemptible=False, cpu=1500))
    assert not verdict.admitted
    assert verdict.reason == "quota team: cpu used 1 + request 1500m > min (non-preemptible) 2"


def test_the_same_pod_preemptible_only_needs_the_runtime() -> None:
    team = cpu_team(min=2000, used=1000, np_used=1000)
    assert verdict_for(team, pod("p", cpu=1500)).admitted


def test_a_non_preemptible_pod_within_min_fits() -> None:
    team = cpu_team(min=2000, used=1000, np_used=1000)
    assert verdict_for(team, pod("p", preemptible=False, cpu=1000)).admitted


def test_the_non_preemptible_check_uses_the_spec_min_not_the_scaled_min() -> None:
    team = cpu_team(min=4000, effective_min=1000)
    assert verdict_for(team, pod("p", preemptible=False, cpu=3000)).admitted


def test_the_non_preemptible_check_only_looks_at_keys_of_min() -> None:
    team = quota(
        "team",
        min={"cpu": 2000},
        max={"cpu": 8000, "memory": 8 * GI},
        used={"cpu": 0, "memory": 0},
        runtime={"cpu": 8000, "memory": 8 * GI},
        np_used={"cpu": 0, "memory": 0},
    )
    assert verdict_for(team, pod("p", preemptible=False, cpu=1000, memory=4 * GI)).admitted


# -- ancestors (enableCheckParentQuota) ------------------------------------------------------


def family() -> tuple[QuotaResult, QuotaResult, QuotaResult]:
    top = quota("top", max={"cpu": 100_000}, used={"cpu": 9000}, runtime={"cpu": 10_000})
    middle = quota(
        "middle",
        parent="top",
        max={"cpu": 100_000, "memory": 100 * GI},
        used={"cpu": 5000, "memory": 9 * GI},
        runtime={"cpu": 20_000, "memory": 8 * GI},
    )
    leaf = quota(
        "leaf",
        parent="middle",
        max={"cpu": 100_000, "memory": 100 * GI},
        used={"cpu": 0, "memory": 0},
        runtime={"cpu": 10_000, "memory": 10 * GI},
    )
    return top, middle, leaf


def test_ancestors_are_not_checked_by_default() -> None:
    top, middle, leaf = family()
    state = snapshot([top, middle, leaf], [(pod("p", cpu=2000), "leaf")])
    assert check_pod(state, state.pods["ns/p"]).admitted


def test_with_the_ancestor_check_a_full_ancestor_blocks_and_is_named() -> None:
    top, middle, leaf = family()
    state = snapshot([top, middle, leaf], [(pod("p", cpu=2000), "leaf")])
    verdict = check_pod(state, state.pods["ns/p"], check_ancestors=True)
    assert not verdict.admitted
    assert verdict.reason == "quota top: cpu used 9 + request 2 > runtime 10"


def test_an_ancestor_used_list_is_masked_to_the_pod_request_keys() -> None:
    # middle is over its memory runtime, but the pod asks for cpu only: only cpu is compared.
    top, middle, leaf = family()
    state = snapshot([top, middle, leaf], [(pod("p", cpu=500), "leaf")])
    assert check_pod(state, state.pods["ns/p"], check_ancestors=True).admitted


def test_the_quota_itself_is_checked_before_its_ancestors() -> None:
    top, middle, leaf = family()
    state = snapshot([top, middle, leaf], [(pod("p", cpu=11_000), "leaf")])
    verdict = check_pod(state, state.pods["ns/p"], check_ancestors=True)
    assert [item.quota for item in verdict.shortfalls] == ["leaf", "top"]


# -- reserved quotas and which pods get a verdict --------------------------------------------


def test_a_reserved_quota_never_blocks() -> None:
    default = quota(
        DEFAULT_QUOTA, max={"cpu": 1000}, used={"cpu": 5000}, runtime={"cpu": 0}, reserved=True
    )
    verdict = verdict_for(default, pod("p", cpu=1000))
    assert verdict.admitted
    assert "reserved" in verdict.reason


def test_verdicts_are_given_for_pending_pods_only_sorted_by_pod() -> None:
    team = quota("team", max={"cpu": 8000}, used={"cpu": 0}, runtime={"cpu": 8000})
    placed = [
        (pod("z-pending", cpu=1000), "team"),
        (pod("a-pending", cpu=1000), "team"),
        (pod("running", node="n1", phase="Running", cpu=1000), "team"),
        (pod("done", phase="Succeeded", cpu=1000), "team"),
        (pod("failed-on-node", node="n1", phase="Failed", cpu=1000), "team"),
    ]
    verdicts = pending_verdicts(snapshot([team], placed))
    assert [verdict.pod for verdict in verdicts] == ["ns/a-pending", "ns/z-pending"]


def test_each_pending_pod_is_checked_on_its_own_against_current_usage() -> None:
    # Two pods of 3 each against a runtime of 4: each fits alone, so both are admitted.
    team = quota("team", max={"cpu": 8000}, used={"cpu": 0}, runtime={"cpu": 4000})
    placed = [(pod("a", cpu=3000), "team"), (pod("b", cpu=3000), "team")]
    assert [verdict.admitted for verdict in pending_verdicts(snapshot([team], placed))] == [
        True,
        True,
    ]


def test_pending_verdicts_pass_the_ancestor_flag_on() -> None:
    top, middle, leaf = family()
    state = snapshot([top, middle, leaf], [(pod("p", cpu=2000), "leaf")])
    assert [v.admitted for v in pending_verdicts(state)] == [True]
    assert [v.admitted for v in pending_verdicts(state, check_ancestors=True)] == [False]
