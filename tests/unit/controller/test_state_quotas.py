"""ControllerState and quotas: raw bodies in, engine and objects updated, the right loops signalled.

Rules (controller/state.py): every quota change updates the engine and wakes the reconciler's
dispatcher (``trees_changed``), a root quota's change the profile controller too
(``profiles_changed``); an echo of our own write is not parsed again, and what a write returns is
kept for the diff but taken in only by the reader; a broken quota is kept for events but left out of
the engine and reported through ``problems()`` until it is fixed or deleted; the texts of written
quotas are kept once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest
from state_probes import CPU, clear_events, refs

from elasticquota.api.parse import QuotaParse, parse_quota_object
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings

if TYPE_CHECKING:
    from conftest import Bodies


def solved(state: ControllerState, tree: str = keys.DEFAULT_TREE) -> dict[str, object]:
    return dict(state.engine.solve_tree(tree))


def test_a_quota_is_kept_as_last_seen_and_given_to_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    body = k8s.quota(
        "a",
        min={CPU: "1"},
        max={CPU: "4"},
        annotations={"note": "x"},
        status={"used": {CPU: "2"}},
    )
    state.on_quota(body)

    seen = state.quotas[("team", "a")]
    assert (seen.uid, seen.annotations, seen.status) == (
        "uid-team-a",
        {"note": "x"},
        body["status"],
    )
    assert seen.spec == {"min": {CPU: "1"}, "max": {CPU: "4"}}
    assert seen.involved() == {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "namespace": "team",
        "name": "a",
        "uid": "uid-team-a",
    }
    assert "a" in solved(state)


def test_a_quota_change_wakes_the_tree_loops_but_not_the_profile_controller(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    assert state.trees_changed.is_set()
    assert not state.profiles_changed.is_set()


def test_an_unchanged_quota_still_wakes_the_tree_loops(state: ControllerState, k8s: Bodies) -> None:
    """Our own writes echo back with the same spec: the loops must diff them (and write nothing)."""
    body = k8s.quota("a", max={CPU: "4"})
    state.on_quota(body)
    clear_events(state)
    state.on_quota(body)
    assert state.trees_changed.is_set()


class ParseRecorder:
    """``parse_quota_object`` that notes every body it is given."""

    def __init__(self) -> None:
        self.bodies: list[Mapping[str, Any]] = []

    def __call__(self, body: Mapping[str, Any]) -> QuotaParse:
        self.bodies.append(body)
        return parse_quota_object(body)


def test_an_echo_of_our_own_write_is_not_parsed_again(k8s: Bodies) -> None:
    """Thousands of our writes echo back per second in a burst: only what they changed (the
    result annotations, the status) differs, so the spec the engine holds is kept as is."""
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(
        k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}'})
    )
    assert len(parsed.bodies) == 1
    parsed.bodies.clear()
    echo = k8s.quota(
        "a",
        max={CPU: "4"},
        annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}', keys.ANNO_REQUEST: '{"cpu":"1"}'},
        status={"used": {CPU: "1"}},
    )
    clear_events(state)
    state.on_quota(echo)
    assert parsed.bodies == []
    assert state.trees_changed.is_set()
    kept = state.quotas[("team", "a")]
    assert kept.annotations[keys.ANNO_REQUEST] == '{"cpu":"1"}' and kept.status == echo["status"]
    assert kept == state.parsed[("team", "a")]  # the same reading, with the echo's sections
    assert kept.shared_weight == {CPU: 1000}
    assert "a" in solved(state)


def test_the_watch_echo_of_a_kept_write_keeps_the_kept_quota(k8s: Bodies) -> None:
    """Each write echoes twice: the patch's answer (kept) and the watch. The second shows what
    the first did, so memory keeps that very object; an echo showing other figures replaces it."""
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    written = k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"1"}'})
    state.keep_written(written)
    kept = state.quotas[("team", "a")]
    state.on_quota(written)  # the watch
    assert state.quotas[("team", "a")] is kept
    later = k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"2"}'})
    state.on_quota(later)
    assert state.quotas[("team", "a")].annotations[keys.ANNO_REQUEST] == '{"cpu":"2"}'
    assert len(parsed.bodies) == 1


def test_what_a_write_returns_is_kept_for_the_diff_and_taken_in_only_by_the_reader(
    state: ControllerState, k8s: Bodies
) -> None:
    """The write path never re-enters intake: the object a write returned is what the next diff
    reads, but nothing is parsed or woken until the watch brings it to ``on_quota``, which parses
    it since its inputs differ from those the engine holds."""
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    before = solved(state)["a"]
    assert state.take_changed_quotas() == {"a"}
    clear_events(state)
    written = k8s.quota("a", max={CPU: "8"})
    state.keep_written(written, inputs=True)  # a write of the inputs (a profile's root)
    assert state.quotas[("team", "a")].spec["max"] == {CPU: "8"}
    assert not state.trees_changed.is_set() and not state.profiles_changed.is_set()
    assert state.take_changed_quotas() == set()
    assert solved(state)["a"] == before  # the engine still holds what the reader gave it
    state.keep_written(None)  # a dry run sent nothing
    state.on_quota(written)  # the watch
    assert state.trees_changed.is_set() and state.take_changed_quotas() == {"a"}
    assert solved(state)["a"] != before


@pytest.mark.parametrize(
    "change",
    [
        {"max": {CPU: "5"}},
        {"labels": {keys.LABEL_ALLOW_LENT: "false"}},
        {"annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"2"}'}},
        {"annotations": {}},  # an input annotation removed
        {"annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}', "note": "x"}},  # one added
    ],
)
def test_a_change_of_what_the_spec_is_read_from_is_parsed(
    k8s: Bodies, change: dict[str, dict[str, str]]
) -> None:
    base: dict[str, dict[str, str]] = {
        "max": {CPU: "4"},
        "labels": {},
        "annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}'},
    }
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(k8s.quota("a", **base))  # type: ignore[arg-type]
    state.on_quota(k8s.quota("a", **{**base, **change}))  # type: ignore[arg-type]
    assert len(parsed.bodies) == 2


def test_a_root_quota_change_wakes_the_profile_controller(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("pool-root", labels={keys.LABEL_IS_ROOT: "true"}))
    assert state.profiles_changed.is_set()


def test_an_unusable_quota_is_kept_for_events_but_left_out_of_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"}))

    assert ("team", "bad") in state.quotas
    assert "bad" not in solved(state)
    messages = [p.message for p in state.problems() if p.object == "ElasticQuota team/bad"]
    assert any("greater than" in message for message in messages)


def test_a_fixed_quota_loses_its_problem_and_joins_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"}))
    state.on_quota(k8s.quota("bad", min={CPU: "2"}, max={CPU: "4"}))

    assert "ElasticQuota team/bad" not in refs(state)
    assert "bad" in solved(state)


def test_a_quota_that_became_unusable_leaves_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_quota(k8s.quota("a", max={CPU: "lots"}))
    assert "a" not in solved(state)


def test_a_deleted_quota_is_forgotten_with_its_problems(
    state: ControllerState, k8s: Bodies
) -> None:
    body = k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"})
    state.on_quota(body)
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    clear_events(state)

    state.on_quota_deleted(k8s.quota("a"))
    state.on_quota_deleted(body)

    assert state.quotas == {}
    assert "a" not in solved(state)
    assert "ElasticQuota team/bad" not in refs(state)
    assert state.trees_changed.is_set() and state.profiles_changed.is_set()


def test_the_texts_of_written_quotas_are_shared_between_them(
    state: ControllerState, k8s: Bodies
) -> None:
    """10,000 written quotas have a thousand distinct figure lists between them: the JSON texts
    their echoes bring are kept once, not once per quota."""
    for name in ("a", "b"):
        state.on_quota(k8s.quota(name, max={CPU: "4"}))
        body = k8s.quota(name, max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"1"}'})
        body["status"] = {"used": {CPU: "1500m"}}
        state.keep_written(json.loads(json.dumps(body)))  # texts of their own, as parsed
    a, b = state.quotas[("team", "a")], state.quotas[("team", "b")]
    assert a.annotations[keys.ANNO_REQUEST] == '{"cpu":"1"}'
    assert a.annotations[keys.ANNO_REQUEST] is b.annotations[keys.ANNO_REQUEST]
    assert a.status["used"][CPU] is b.status["used"][CPU]
