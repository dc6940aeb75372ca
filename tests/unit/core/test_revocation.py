"""Over-use revocation victim selection.

Numbers are small engine units; cpu in millicores does not matter to the rules, so requests are
written as plain integers.
"""

from __future__ import annotations

from dataclasses import replace

from engine_factories import quota_result

from elasticquota.core.decisions.revocation import (
    least_important_first,
    quota_is_over_used,
    revocation_plan,
    select_victims,
    victims_of,
)
from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.results import QuotaResult, Snapshot, is_over_used

TRACKED = {"cpu": 10**9, "memory": 10**9}


def pod(
    name: str,
    priority: int = 0,
    start: float | None = 0.0,
    *,
    preemptible: bool = True,
    node: str = "n1",
    **requests: int,
) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        requests=dict(requests),
        preemptible=preemptible,
        priority=priority,
        phase="Running" if node else "Pending",
        node_name=node,
        start_time=start,
    )


def names(pods: list[PodInfo]) -> list[str]:
    return [item.name for item in pods]


# -- over-use and ordering --------------------------------------------------------------------


def test_over_use_compares_only_resources_present_in_both_lists() -> None:
    assert is_over_used({"cpu": 5}, {"cpu": 4})
    assert not is_over_used({"cpu": 4}, {"cpu": 4})
    assert not is_over_used({"cpu": 5}, {"memory": 1})
    assert not is_over_used({"memory": 5}, {"cpu": 1, "memory": 5})


def test_lower_priority_is_less_important() -> None:
    pods = [pod("high", 10), pod("low", 1), pod("mid", 5)]
    assert names(least_important_first(pods)) == ["low", "mid", "high"]


def test_at_equal_priority_the_pod_that_started_later_is_less_important() -> None:
    pods = [pod("early", 5, start=100.0), pod("late", 5, start=200.0)]
    assert names(least_important_first(pods)) == ["late", "early"]


def test_a_pod_without_start_time_counts_as_starting_now() -> None:
    pods = [pod("started", 5, start=1e12), pod("no-start", 5, start=None), pod("low", 1)]
    assert names(least_important_first(pods)) == ["low", "no-start", "started"]


def test_a_pod_without_start_time_goes_after_even_a_start_time_in_the_future() -> None:
    pods = [pod("skewed", 5, start=4e9), pod("no-start", 5, start=None)]
    assert names(least_important_first(pods)) == ["no-start", "skewed"]


def test_an_exact_tie_goes_by_namespace_and_name() -> None:
    """Equal priority and start time (startTime has whole seconds), or both without one: the
    reference's order is open (an unstable sort); here it is fixed, whatever the input order."""
    tied = [pod("b", 5, start=100.0), pod("c", 5, start=None), pod("a", 5, start=100.0)]
    tied.append(pod("d", 5, start=None))
    assert names(least_important_first(tied)) == ["c", "d", "a", "b"]
    assert names(least_important_first(list(reversed(tied)))) == ["c", "d", "a", "b"]


# -- victim selection -------------------------------------------------------------------------


def test_nothing_is_evicted_when_used_fits_the_runtime() -> None:
    pods = [pod("a", cpu=2), pod("b", cpu=2)]
    assert select_victims(pods, {"cpu": 4}, {"cpu": 4}, TRACKED) == []


def test_removal_stops_as_soon_as_used_fits() -> None:
    pods = [pod("high", 3, cpu=2), pod("mid", 2, cpu=2), pod("low", 1, cpu=2)]
    victims = select_victims(pods, {"cpu": 6}, {"cpu": 4}, TRACKED)
    assert names(victims) == ["low"]


def test_non_preemptible_pods_are_never_victims() -> None:
    pods = [pod("high", 3, cpu=2), pod("mid", 2, cpu=2), pod("low", 1, preemptible=False, cpu=2)]
    victims = select_victims(pods, {"cpu": 6}, {"cpu": 4}, TRACKED)
    assert names(victims) == ["mid"]


def test_spared_pods_are_never_victims_and_the_next_ones_give_back_instead() -> None:
    """What ``revocation_around_budgets`` asks when a budget kept ``low`` (its key spared)."""
    pods = [pod("high", 3, cpu=2), pod("mid", 2, cpu=2), pod("low", 1, cpu=2)]
    assert names(select_victims(pods, {"cpu": 6}, {"cpu": 4}, TRACKED)) == ["low"]
    victims = select_victims(pods, {"cpu": 6}, {"cpu": 4}, TRACKED, spared={"ns/low"})
    assert names(victims) == ["mid"]
    everyone = {"ns/low", "ns/mid", "ns/high"}
    assert select_victims(pods, {"cpu": 6}, {"cpu": 4}, TRACKED, spared=everyone) == []


def test_pods_not_assigned_to_a_node_are_not_candidates() -> None:
    pods = [pod("high", 3, cpu=2), pod("pending", 0, node="", cpu=2), pod("low", 1, cpu=2)]
    victims = select_victims(pods, {"cpu": 4}, {"cpu": 3}, TRACKED)
    assert names(victims) == ["low"]


def test_removed_pods_that_still_fit_are_assigned_back_from_the_most_important() -> None:
    # Remove a (1) -> 7, b (3) -> 4 <= 5. Back: b 4+3=7 > 5 -> victim; a 4+1=5 fits -> kept.
    pods = [pod("a", 1, cpu=1), pod("b", 2, cpu=3), pod("c", 3, cpu=4)]
    victims = select_victims(pods, {"cpu": 8}, {"cpu": 5}, TRACKED)
    assert names(victims) == ["b"]


def test_victims_are_returned_most_important_first() -> None:
    pods = [pod("a", 1, cpu=2), pod("b", 2, cpu=2), pod("c", 3, cpu=2)]
    victims = select_victims(pods, {"cpu": 6}, {"cpu": 1}, TRACKED)
    assert names(victims) == ["c", "b", "a"]


def test_when_still_over_used_every_removed_pod_is_returned_in_removal_order() -> None:
    # c is non-preemptible: after removing a and b, 2 > 1 still, so both go, least first.
    pods = [pod("a", 1, cpu=2), pod("b", 2, cpu=2), pod("c", 3, preemptible=False, cpu=2)]
    victims = select_victims(pods, {"cpu": 6}, {"cpu": 1}, TRACKED)
    assert names(victims) == ["a", "b"]


def test_requests_are_masked_to_the_tracked_keys() -> None:
    # The quota tracks cpu only. Remove gpu-job (cpu 1) -> 3 > 2, web (cpu 3) -> 0. Back: web
    # 0+3 > 2 -> victim; gpu-job 0+1 <= 2 fits, its untracked GPUs are not compared.
    pods = [pod("gpu-job", 1, cpu=1, **{"nvidia.com/gpu": 8}), pod("web", 2, cpu=3)]
    used = {"cpu": 4, "nvidia.com/gpu": 8}
    runtime = {"cpu": 2, "nvidia.com/gpu": 0}
    victims = select_victims(pods, used, runtime, {"cpu": 10})
    assert names(victims) == ["web"]


def test_quirk_used_is_restricted_to_the_removed_pod_resources() -> None:
    # Over in cpu (10 > 5) and memory (10 > 8). Removing the cpu-only pod leaves used = {cpu: 4}:
    # memory is no longer compared, so removal stops although memory is still over.
    pods = [pod("cpu-only", 1, cpu=6), pod("both", 2, cpu=1, memory=4)]
    victims = select_victims(pods, {"cpu": 10, "memory": 10}, {"cpu": 5, "memory": 8}, TRACKED)
    assert names(victims) == ["cpu-only"]


def test_quirk_a_pod_without_the_over_used_resource_hides_the_over_use() -> None:
    # Over in cpu only. The least important pod asks for memory only: once it is tentatively
    # removed used = {memory: 2}, cpu is not compared any more, it is assigned back, no victim.
    pods = [pod("memory-only", 1, memory=1), pod("cpu-heavy", 2, cpu=6)]
    victims = select_victims(pods, {"cpu": 10, "memory": 3}, {"cpu": 5, "memory": 8}, TRACKED)
    assert victims == []


# -- the plan over a snapshot -----------------------------------------------------------------


def result(
    name: str, used: ResourceList, runtime: ResourceList, *, reserved: bool = False
) -> QuotaResult:
    requested = {field: used for field in ("request", "child_request", "limited_request", "used")}
    limits = {"max": {"cpu": 100}, "shared_weight": {"cpu": 100}}
    return quota_result(name, reserved=reserved, runtime=runtime, **requested, **limits)


def snapshot(results: list[QuotaResult], pods_by_quota: dict[str, list[PodInfo]]) -> Snapshot:
    return Snapshot(
        quotas={item.name: item for item in results},
        totals={"": {}},
        pods={p.key: p for pods in pods_by_quota.values() for p in pods},
        pod_quota={p.key: quota for quota, pods in pods_by_quota.items() for p in pods},
        pods_by_quota=pods_by_quota,
    )


def test_the_plan_lists_each_over_used_quota_with_its_victims() -> None:
    state = snapshot(
        [
            result("fine", {"cpu": 2}, {"cpu": 4}),
            result("over", {"cpu": 6}, {"cpu": 4}),
        ],
        {
            "fine": [pod("f1", cpu=2)],
            "over": [pod("o1", 1, cpu=3), pod("o2", 2, cpu=3)],
        },
    )
    plan = revocation_plan(state)
    assert [(quota, names(victims)) for quota, victims in plan] == [("over", ["o1"])]


def test_the_plan_only_considers_the_quota_own_pods() -> None:
    # A parent whose children use too much has no own pods to give back.
    state = snapshot(
        [result("parent", {"cpu": 6}, {"cpu": 4}), result("child", {"cpu": 6}, {"cpu": 8})],
        {"child": [pod("c1", cpu=6)]},
    )
    assert [(quota, names(victims)) for quota, victims in revocation_plan(state)] == [
        ("parent", [])
    ]


def test_terminating_pods_count_as_given_back_in_the_plan_and_the_live_round() -> None:
    going = replace(pod("going", 0, cpu=2), terminating=True)
    state = snapshot(
        [result("team", {"cpu": 6}, {"cpu": 4})],
        {"team": [going, pod("stay", 9, cpu=2), pod("spare", 1, cpu=2)]},
    )
    assert not quota_is_over_used(state, "team")  # 6 - 2 terminating = 4: nothing to do
    assert victims_of(state, "team") == []
    assert revocation_plan(state) == []


def test_the_plan_lists_what_one_live_round_evicts() -> None:
    state = snapshot(
        [result("team", {"cpu": 6}, {"cpu": 4})],
        {"team": [pod("a", 1, start=10.0, cpu=2), pod("b", 1, start=20.0, cpu=2)]},
    )
    assert quota_is_over_used(state, "team")
    assert revocation_plan(state) == [("team", victims_of(state, "team"))]
    assert names(victims_of(state, "team")) == ["b"]


def test_the_plan_skips_root_system_and_default_quotas() -> None:
    over = {"cpu": 6}, {"cpu": 4}
    state = snapshot(
        [
            result(ROOT_QUOTA, *over),
            result(SYSTEM_QUOTA, *over),
            result(DEFAULT_QUOTA, *over),
            result("team", *over),
        ],
        {
            SYSTEM_QUOTA: [pod("s", cpu=6)],
            DEFAULT_QUOTA: [pod("d", cpu=6)],
            "team": [pod("t", cpu=6)],
        },
    )
    assert [quota for quota, _ in revocation_plan(state)] == ["team"]


def test_the_plan_skips_any_reserved_quota() -> None:
    state = snapshot(
        [result("special", {"cpu": 6}, {"cpu": 4}, reserved=True)],
        {"special": [pod("s", cpu=6)]},
    )
    assert revocation_plan(state) == []


def test_the_plan_is_sorted_by_quota_name() -> None:
    over = {"cpu": 6}, {"cpu": 4}
    state = snapshot(
        [result("b", *over), result("a", *over)],
        {"a": [pod("a1", cpu=6)], "b": [pod("b1", cpu=6)]},
    )
    assert [quota for quota, _ in revocation_plan(state)] == ["a", "b"]
