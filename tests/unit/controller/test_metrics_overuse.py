"""The over-used quotas' revocation timers as gauges (controller/metrics/overuse.py): when each
over-use began, and the minimum runtime of the quota's pods (its annotation, an ancestor's, else
the operator's setting); only for the quotas the revocation loop times, on the active replica."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.overuse import OverUseTimers
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies

SINCE = "elastic_quota_over_used_since_timestamp_seconds"
MIN_RUNTIME = "elastic_quota_revocation_min_runtime_seconds"


def shown(metrics: Metrics, name: str) -> dict[str, tuple[tuple[str, str, str], float]]:
    """quota -> ((tree, namespace, parent), value) of the samples of family ``name``."""
    return {
        sample.labels["quota"]: (
            (sample.labels["tree"], sample.labels["namespace"], sample.labels["parent"]),
            sample.value,
        )
        for family in metrics.registry.collect()
        if family.name == name
        for sample in family.samples
    }


@pytest.fixture
def solved(state: ControllerState, k8s: Bodies) -> ControllerState:
    """``dept`` asks its pods to run 10 minutes (annotation), ``team-a`` below it says nothing,
    ``team-b`` beside it neither; the default tree solved."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8"}))
    ten_minutes = {keys.ANNO_REVOCATION_MIN_RUNTIME: "10m"}
    for body in (
        k8s.quota("dept", max={"cpu": "8"}, is_parent=True, annotations=ten_minutes),
        k8s.quota("team-a", max={"cpu": "4"}, parent="dept"),
        k8s.quota("team-b", "other", max={"cpu": "4"}),
    ):
        state.on_quota(body)
    state.mark_synced()
    state.results[""] = state.engine.solve_tree("")
    return state


def test_each_timed_quota_shows_its_start_and_its_pods_minimum_runtime(
    solved: ControllerState, metrics: Metrics
) -> None:
    assert shown(metrics, SINCE) == shown(metrics, MIN_RUNTIME) == {}  # nothing timed yet

    timers = {"team-a": 1_700_000_000.5, "team-b": 1_700_000_100.0, "deleted": 5.0}
    metrics.over_use_timers(OverUseTimers(timers, default_min_runtime=60.0))

    team_a = ("", "team", "dept")
    team_b = ("", "other", keys.ROOT_QUOTA)
    assert shown(metrics, SINCE) == {
        "team-a": (team_a, 1_700_000_000.5),
        "team-b": (team_b, 1_700_000_100.0),
    }
    assert shown(metrics, MIN_RUNTIME) == {
        "team-a": (team_a, 600.0),  # dept's annotation
        "team-b": (team_b, 60.0),  # the operator's setting
    }


def test_an_over_use_that_ended_is_gone_at_the_next_publication(
    solved: ControllerState, metrics: Metrics
) -> None:
    metrics.over_use_timers(OverUseTimers({"team-a": 10.0, "team-b": 20.0}, 0.0))
    metrics.over_use_timers(OverUseTimers({"team-b": 20.0}, 0.0))
    assert set(shown(metrics, SINCE)) == set(shown(metrics, MIN_RUNTIME)) == {"team-b"}
    assert shown(metrics, MIN_RUNTIME)["team-b"][1] == 0.0


def test_a_standby_shows_no_timer(
    solved: ControllerState, metrics: Metrics, leading: asyncio.Event
) -> None:
    metrics.over_use_timers(OverUseTimers({"team-a": 10.0}, 0.0))
    leading.clear()
    assert shown(metrics, SINCE) == shown(metrics, MIN_RUNTIME) == {}
    assert SINCE in {family.name for family in metrics.registry.collect()}


def test_metrics_that_watch_no_state_ignore_timers() -> None:
    metrics = Metrics()
    metrics.over_use_timers(OverUseTimers({"team-a": 10.0}, 0.0))
    assert SINCE not in {family.name for family in metrics.registry.collect()}
