"""The revocation timer (§3.4) and what revocation counts as already given back."""

from __future__ import annotations

from elasticquota.core.models import PodInfo
from elasticquota.core.overuse import OverUseTimer, format_since, parse_since
from elasticquota.core.revocation import select_victims, used_without_terminating


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


def test_a_restored_start_keeps_counting_after_a_restart() -> None:
    timer = OverUseTimer(delay=10, since={"q": parse_since(format_since(100.25)) or 0})
    assert timer.since["q"] == 100.25
    assert timer.observe("q", True, 110.5)


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
