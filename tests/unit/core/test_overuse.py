"""The revocation timer and what revocation counts as already given back."""

from __future__ import annotations

from elasticquota.core.decisions.overuse import OverUseTimer, format_since, parse_since
from elasticquota.core.decisions.revocation import select_victims, used_without_terminating
from elasticquota.core.model.models import PodInfo


def test_a_round_is_due_only_after_strictly_more_than_the_delay_of_continuous_over_use() -> None:
    timer = OverUseTimer(delay=120)
    assert not timer.observe("q", True, 1000)
    assert not timer.observe("q", True, 1120)  # exactly the delay: not yet (strict)
    assert timer.observe("q", True, 1120.5)
    assert not timer.observe("q", True, 1200)  # the timer restarted at the round
    assert timer.observe("q", True, 1241)


def test_an_interruption_restarts_the_timer() -> None:
    timer = OverUseTimer(delay=10)
    timer.observe("q", True, 0)
    timer.observe("q", False, 8)
    assert not timer.observe("q", True, 11)
    assert timer.since == {"q": 11}


def test_rounds_leave_the_start_of_the_over_use_where_it_was() -> None:
    """The start is what the quota's annotation shows: a round restarts only the round clock,
    so an over-use with nothing to evict is not given a new start every delay."""
    timer = OverUseTimer(delay=10)
    assert not timer.observe("q", True, 100)
    rounds = [now for now in range(101, 200) if timer.observe("q", True, now)]
    assert rounds == [111, 122, 133, 144, 155, 166, 177, 188, 199]  # each a full delay apart
    assert timer.since == {"q": 100}
    assert not timer.observe("q", False, 200)
    assert timer.since == {} and timer.last_round == {}


def test_a_restored_start_keeps_counting_after_a_restart() -> None:
    timer = OverUseTimer(delay=10)
    timer.restore("q", parse_since(format_since(100.25)) or 0)
    assert timer.since["q"] == 100.25
    assert not timer.observe("q", True, 110.25)
    assert timer.observe("q", True, 110.5)
    assert timer.since["q"] == 100.25


def test_after_a_restart_a_long_over_use_gets_its_round_at_once_then_one_per_delay() -> None:
    """An operator down when the round was due does it when it is back."""
    timer = OverUseTimer(delay=10)
    timer.restore("q", 100)
    assert timer.observe("q", True, 135)
    assert not timer.observe("q", True, 145)
    assert timer.observe("q", True, 145.5)
    assert timer.since["q"] == 100


def test_a_forgotten_quota_starts_anew() -> None:
    timer = OverUseTimer(delay=10)
    timer.observe("q", True, 0)
    timer.observe("q", True, 11)
    timer.forget("q")
    assert not timer.observe("q", True, 12)
    assert timer.since == {"q": 12}


def test_unreadable_start_times_are_ignored() -> None:
    assert parse_since("yesterday") is None
    assert parse_since(None) is None


def pod(name: str, cpu: int, priority: int = 0, terminating: bool = False) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        requests={"cpu": cpu},
        priority=priority,
        node_name="n1",
        phase="Running",
        start_time=float(priority),
        terminating=terminating,
    )


def test_terminating_pods_count_as_given_back_and_are_never_victims() -> None:
    pods = [pod("going", 2000, terminating=True), pod("low", 2000), pod("high", 2000, 10)]
    used = used_without_terminating({"cpu": 6000}, pods, {"cpu": 10_000})
    assert used == {"cpu": 4000}
    assert select_victims(pods, used, {"cpu": 3000}, {"cpu": 10_000}) == [pods[1]]
    # counting the terminating pod would have evicted a second one for the same over-use
    assert len(select_victims(pods, {"cpu": 6000}, {"cpu": 3000}, {"cpu": 10_000})) == 2
