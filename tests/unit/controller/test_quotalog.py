"""The memory's log of quota changes: one entry per key at its latest change, read from a number
on, and deleted keys dropped once they pile up past the live ones."""

from __future__ import annotations

from elasticquota.controller.quotalog import TOMBSTONES_KEPT, QuotaChangeLog


def test_a_key_appears_once_at_its_latest_change_newest_first() -> None:
    log = QuotaChangeLog()
    live = {("team", "a"), ("team", "b"), ("team", "c")}
    for name in ("a", "b", "c", "a"):
        log.note(("team", name), live)
    assert log.sequence == 4
    assert log.since(0) == [(("team", "a"), 4), (("team", "c"), 3), (("team", "b"), 2)]
    assert log.since(2) == [(("team", "a"), 4), (("team", "c"), 3)]
    assert log.since(4) == []
    assert len(log) == 3 and ("team", "b") in log and ("team", "d") not in log


def test_deleted_keys_are_dropped_past_the_bound_and_forgotten_says_up_to_which_change() -> None:
    log = QuotaChangeLog()
    live = {("team", "kept")}
    log.note(("team", "kept"), live)
    for index in range(2 * TOMBSTONES_KEPT):
        log.note(("ci", f"q{index}"), live)  # created and deleted: never live
    assert len(log) <= 2 * len(live) + TOMBSTONES_KEPT + 1
    assert ("team", "kept") in log
    assert 1 < log.forgotten < log.sequence
    older = [key for key, number in log.since(0) if number <= log.forgotten]
    assert older == [("team", "kept")]  # of the changes up to forgotten, only live keys stay


def test_the_key_being_noted_is_never_dropped_even_before_it_is_live() -> None:
    log = QuotaChangeLog()
    for index in range(TOMBSTONES_KEPT + 1):
        log.note(("ci", f"q{index}"), set())
    log.note(("team", "new"), set())  # created: the memory stores it after the note
    assert ("team", "new") in log
