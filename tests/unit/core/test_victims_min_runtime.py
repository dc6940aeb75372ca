"""Revocation's minimum runtime (``revocation_min_runtime``): young pods are not chosen.

The round evicts what it would without the rule, but the pods that have run less than the minimum;
in their place only pods of no higher priority may go (older pods of their priority), so the rule
delays a revocation and never turns the priority order over. Quota ``team`` has 4 cpu; every pod
asks for 2; times are epoch seconds, ``NOW`` 1000 and a minimum of 60 s.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_revocation import TRACKED, names, pod, result, snapshot

from elasticquota.core.decisions.minruntime import NO_MIN_RUNTIME, MinRuntime, MinRuntimes
from elasticquota.core.decisions.overuse import OverUseTimer
from elasticquota.core.decisions.revocation import (
    revocation_choices,
    revocation_plan,
    round_choice,
    select_victims,
    victims_of,
)
from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.results import Snapshot

NOW = 1000.0
YOUNG = MinRuntime(60.0, NOW)


def team(*pods: PodInfo) -> Snapshot:
    used = {"cpu": 2 * len(pods)}
    return snapshot([result("team", used, {"cpu": 4})], {"team": list(pods)})


def test_protection_covers_pods_younger_than_the_minimum_only() -> None:
    assert YOUNG.protects(pod("young", start=NOW - 59))
    assert not YOUNG.protects(pod("old", start=NOW - 60))
    assert not YOUNG.protects(pod("unstarted", start=None))  # has not run: nothing to lose
    assert YOUNG.ends(pod("young", start=NOW - 59)) == NOW + 1
    assert MinRuntime(60.0, 30.0).ends(pod("epoch", start=0.0)) == 60.0  # 0 is a start time


def test_no_minimum_protects_nothing_not_even_a_start_time_in_the_future() -> None:
    assert not NO_MIN_RUNTIME.protects(pod("skewed", start=4e9))
    assert not MinRuntime(0.0, NOW).protects(pod("skewed", start=NOW + 10))


def test_an_older_pod_of_the_same_priority_goes_in_place_of_a_young_one() -> None:
    state = team(
        pod("keep", 9, start=0.0, cpu=2),
        pod("old", 0, 0.0, cpu=2),
        pod("young", 0, NOW - 10, cpu=2),
    )
    assert names(victims_of(state, "team")) == ["young"]  # the reference: the later start first
    assert names(victims_of(state, "team", min_runtime=YOUNG)) == ["old"]
    assert names(round_choice(state, "team", min_runtime=YOUNG).spared) == ["young"]


def test_a_more_important_pod_never_goes_in_place_of_a_young_one() -> None:
    state = team(
        pod("keep", 9, 0.0, cpu=2), pod("mid", 5, 0.0, cpu=2), pod("young", 0, NOW - 10, cpu=2)
    )
    assert victims_of(state, "team", min_runtime=YOUNG) == []  # the round waits for young
    assert names(round_choice(state, "team", min_runtime=YOUNG).spared) == ["young"]


def test_what_the_round_evicts_anyway_still_goes_beside_a_young_pod() -> None:
    """Used 8 > 4: without the rule mid and low go; low is young, so mid goes alone now (it is
    due anyway), and no pod of priority 5 or 9 takes low's place."""
    state = team(
        pod("keep", 9, 0.0, cpu=2),
        pod("mid-old", 5, 0.0, cpu=2),
        pod("mid", 5, 500.0, cpu=2),
        pod("low", 0, NOW - 10, cpu=2),
    )
    assert names(victims_of(state, "team")) == ["mid", "low"]
    assert names(victims_of(state, "team", min_runtime=YOUNG)) == ["mid"]


def test_pods_without_a_start_time_and_old_pods_are_chosen_as_before() -> None:
    state = team(
        pod("keep", 9, 0.0, cpu=2), pod("bound", 0, None, cpu=2), pod("old", 0, 0.0, cpu=2)
    )
    assert victims_of(state, "team", min_runtime=YOUNG) == victims_of(state, "team")
    assert round_choice(state, "team", min_runtime=YOUNG).spared == []


def quotas(*specs: Quota) -> MinRuntimes:
    """The protection by quota over ``specs``, the operator's setting 60 s (``YOUNG``)."""
    return MinRuntimes(YOUNG, {spec.name: spec for spec in specs}.get)


def test_a_quota_takes_its_own_minimum_else_its_nearest_ancestors_else_the_operators() -> None:
    by_quota = quotas(
        Quota("org", "ns", parent=ROOT_QUOTA, is_parent=True, revocation_min_runtime=600.0),
        Quota("dept", "ns", parent="org", is_parent=True),
        Quota("team", "ns", parent="dept"),
        Quota("batch", "ns", parent="dept", revocation_min_runtime=0.0),
        Quota("other", "ns", parent=ROOT_QUOTA),
    )
    assert by_quota.of("team") == MinRuntime(600.0, NOW)  # the grandparent's
    assert by_quota.of("batch") == MinRuntime(0.0, NOW)  # 0: none below it, whatever above
    assert by_quota.of("other") is YOUNG  # none on the way up: the operator's
    assert by_quota.of("unknown") is YOUNG
    looped = quotas(Quota("a", "ns", parent="b"), Quota("b", "ns", parent="a"))
    assert looped.of("a") is YOUNG  # a cycle (left out of the trees anyway) ends the walk


def test_the_plan_of_a_quota_with_its_own_minimum_spares_by_it() -> None:
    state = team(
        pod("old", 0, 0.0, cpu=2), pod("young", 0, NOW - 300, cpu=2), pod("x", 9, 0.0, cpu=2)
    )
    assert revocation_plan(state, quotas(Quota("team", "ns"))) == [
        ("team", victims_of(state, "team"))
    ]
    own = quotas(Quota("team", "ns", revocation_min_runtime=600.0))  # young: 300 s < 600
    ((name, choice),) = revocation_choices(state, own)
    assert (name, names(choice.victims), names(choice.spared)) == ("team", ["old"], ["young"])
    assert choice.min_runtime.ends(choice.spared[0]) == NOW + 300


def test_a_round_names_its_victims_and_the_pods_it_spared_in_eviction_order() -> None:
    state = team(
        pod("low-young", 0, NOW - 5, cpu=2),
        pod("mid-young", 5, NOW - 10, cpu=2),
        pod("low-old", 0, NOW - 900, cpu=2),
        pod("mid-old", 5, NOW - 900, cpu=2),
    )  # 8 cpu used of 4: two pods go
    assert names(victims_of(state, "team")) == ["low-old", "low-young"]
    choice = round_choice(state, "team", min_runtime=YOUNG)
    assert (names(choice.victims), names(choice.spared)) == (["low-old"], ["low-young"])
    assert round_choice(state, "team").spared == []  # no minimum: nothing spared


def test_the_protection_and_the_pods_a_budget_kept_add_up() -> None:
    pods = [
        pod("keep", 9, 0.0, cpu=2),
        pod("a", 0, 0.0, cpu=2),
        pod("b", 0, 10.0, cpu=2),
        pod("young", 0, NOW - 1, cpu=2),
    ]
    used, runtime = {"cpu": 8}, {"cpu": 6}
    chosen = select_victims(pods, used, runtime, TRACKED, spared={"ns/b"}, protected={"ns/young"})
    assert names(chosen) == ["a"]


def test_the_plan_spares_the_young_pods_as_the_live_round_does() -> None:
    state = team(
        pod("keep", 9, 0.0, cpu=2), pod("old", 0, 0.0, cpu=2), pod("young", 0, NOW - 10, cpu=2)
    )
    assert [(quota, names(pods)) for quota, pods in revocation_plan(state, MinRuntimes(YOUNG))] == [
        ("team", ["old"])
    ]


def test_a_round_that_spared_pods_is_due_again_when_the_first_may_go() -> None:
    timer = OverUseTimer(delay=120.0)
    assert not timer.observe("team", True, 0.0)
    assert timer.observe("team", True, 121.0)  # the round
    timer.due_again_by("team", 150.0)  # it spared a pod until 150
    assert not timer.observe("team", True, 150.0)
    assert timer.observe("team", True, 150.5)
    assert not timer.observe("team", True, 200.0)  # then a full delay again
    timer.due_again_by("team", 1000.0)  # later than the delay's own next round: no change
    assert timer.observe("team", True, 271.0)


def test_a_quota_that_fits_again_is_not_made_due() -> None:
    timer = OverUseTimer(delay=120.0)
    timer.due_again_by("team", 10.0)
    assert "team" not in timer.last_round and "team" not in timer.since


# -- any pods -----------------------------------------------------------------------------------

young_or_old = st.builds(
    lambda index, priority, start, cpu: pod(f"p{index}", priority, start, cpu=cpu),
    st.integers(0, 7),
    st.integers(0, 3),
    st.sampled_from([None, 0.0, 500.0, NOW - 30, NOW - 5]),
    st.integers(1, 4),
)


@settings(max_examples=300, deadline=None)
@given(
    pods=st.lists(young_or_old, max_size=8, unique_by=lambda item: item.name),
    runtime=st.integers(0, 12),
)
def test_no_young_pod_goes_and_none_more_important_than_them_goes_in_their_place(
    pods: list[PodInfo], runtime: int
) -> None:
    used = {"cpu": sum(item.requests["cpu"] for item in pods)}
    young = {item.key for item in pods if YOUNG.protects(item)}
    due = {item.key for item in select_victims(pods, used, {"cpu": runtime}, TRACKED)}
    chosen = select_victims(pods, used, {"cpu": runtime}, TRACKED, protected=young)
    lowest_young = min((item.priority for item in pods if item.key in young), default=None)
    for victim in chosen:
        assert victim.key not in young
        if victim.key not in due:  # in a young pod's place: never of a higher priority
            assert lowest_young is not None and victim.priority <= lowest_young
