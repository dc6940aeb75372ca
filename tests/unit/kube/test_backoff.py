"""A reader's waits between attempts (kube/backoff.py).

Rules: failures in a row wait 1, 2, 4... s up to 10 s, each less up to a quarter of itself at
random; a watch that delivered events or stayed open 10 s starts them over; a 410 waits nothing
the first time (and after every watch that stayed open 10 s), and as a failure when it comes again.
"""

from __future__ import annotations

import pytest

from elasticquota.kube.backoff import HEALTHY_WATCH, MAX_DELAY, Backoff


def test_failures_in_a_row_double_the_wait_up_to_the_most() -> None:
    backoff = Backoff(draw=lambda: 0.0)
    assert MAX_DELAY == 10
    assert [backoff.failed() for _ in range(7)] == [1, 2, 4, 8, 10, 10, 10]


def test_a_wait_is_shortened_by_up_to_a_quarter_at_random() -> None:
    assert Backoff(draw=lambda: 0.5).failed() == pytest.approx(0.875)
    assert Backoff(draw=lambda: 0.999).failed() == pytest.approx(0.75025)


def test_no_overflow_after_very_many_failures() -> None:
    backoff = Backoff(draw=lambda: 0.0)
    for _ in range(5000):
        backoff.failed()
    assert backoff.failed() == MAX_DELAY


@pytest.mark.parametrize(("events", "lasted"), [(1, 0.0), (0, HEALTHY_WATCH)])
def test_a_watch_that_worked_starts_the_waits_over(events: int, lasted: float) -> None:
    backoff = Backoff(draw=lambda: 0.0)
    backoff.failed()
    backoff.failed()
    backoff.watch_ended(events=events, lasted=lasted)
    assert backoff.failed() == 1


def test_a_watch_that_ended_at_once_without_an_event_does_not() -> None:
    backoff = Backoff(draw=lambda: 0.0)
    backoff.failed()
    backoff.watch_ended(events=0, lasted=0.5)
    assert backoff.failed() == 2


def test_a_410_is_routine_once_then_waits_until_a_long_watch() -> None:
    backoff = Backoff(draw=lambda: 0.0)
    assert [backoff.expired(), backoff.expired(), backoff.expired()] == [0, 1, 2]
    backoff.watch_ended(events=3, lasted=1.0)  # events start the waits over, but 410 still waits
    assert backoff.expired() == 1
    backoff.watch_ended(events=0, lasted=HEALTHY_WATCH)
    assert [backoff.expired(), backoff.expired()] == [0, 1]
