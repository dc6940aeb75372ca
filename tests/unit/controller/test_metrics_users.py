"""The per-user and per-group gauges, read from the user limits' frozen view at scrape time.

Rules (controller/metrics/users.py): usage per resource and running applications per user (group)
and quota, at every quota of the path; the limit in force per resource and on applications (no
series where nothing limits); at most N users (groups) per quota with series of their own, those
with the most pods, the others summed under ``(other)`` without a limit, and the number folded
as ``elastic_quota_user_subjects_folded{kind}``; active replica only; a scrape reads the view
captured on the event loop, which later pod events leave alone.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.collectors import SCRAPE_VIEW, capture_view
from elasticquota.controller.metrics.names import resource_unit
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies

LIMITS = [
    {"limit": "sue's", "users": ["sue"], "maxresources": {"cpu": "3"}, "maxapplications": 4},
    {"users": ["*"], "maxresources": {"cpu": "1"}},
    {"groups": ["dev"], "maxresources": {"cpu": "6", "memory": "8Gi"}},
]


def running(k8s: Bodies, name: str, cpu: str, user: str | None, groups: list[str]) -> Any:
    body = k8s.pod(name, quota="team-a", requests={"cpu": cpu}, node="n1", phase="Running")
    if user is not None:
        info = json.dumps({"user": user, "groups": groups})
        body["metadata"]["annotations"] = {keys.ANNO_USER_INFO: info}
    return body


@pytest.fixture
def world(state: ControllerState, k8s: Bodies) -> ControllerState:
    """dept > team-a with user limits on team-a; sue (group dev) runs two pods, bob one, and one
    pod has no identity (the default user, nobody)."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "16", "memory": "32Gi"}))
    state.on_quota(k8s.quota("dept", max={"cpu": "16"}, is_parent=True))
    annotations = {keys.ANNO_USER_LIMITS: json.dumps(LIMITS)}
    state.on_quota(k8s.quota("team-a", max={"cpu": "16"}, parent="dept", annotations=annotations))
    state.on_pod(running(k8s, "sue-1", "1", "sue", ["dev"]))
    state.on_pod(running(k8s, "sue-2", "500m", "sue", ["dev"]))
    state.on_pod(running(k8s, "bob-1", "500m", "bob", []))
    state.on_pod(running(k8s, "anon", "250m", None, []))
    state.mark_synced()
    assert not [problem for problem in state.problems() if "team-a" in problem.object]
    return state


def sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    """The series of ``labels`` (default tree; the ``unit`` label of a ``resource``'s figures
    follows from it: cores for cpu, bytes for memory, units otherwise)."""
    if "resource" in labels:
        labels = {"unit": resource_unit(labels["resource"]), **labels}
    return metrics.registry.get_sample_value(name, {"tree": "", **labels})


def subjects(metrics: Metrics, name: str, kind: str, quota: str) -> set[str]:
    return {
        sample.labels[kind]
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == name and sample.labels["quota"] == quota
    }


def test_usage_applications_and_limits_per_user_and_quota(
    world: ControllerState, metrics: Metrics
) -> None:
    used = "elastic_quota_user_used"
    assert sample(metrics, used, quota="team-a", user="sue", resource="cpu") == 1.5
    assert sample(metrics, used, quota="dept", user="sue", resource="cpu") == 1.5  # path
    assert sample(metrics, used, quota="team-a", user="nobody", resource="cpu") == 0.25
    apps = "elastic_quota_user_applications"
    assert sample(metrics, apps, quota="team-a", user="sue") == 2.0
    assert sample(metrics, apps, quota="team-a", user="bob") == 1.0
    limit = "elastic_quota_user_limit"
    assert sample(metrics, limit, quota="team-a", user="sue", resource="cpu") == 3.0
    assert sample(metrics, limit, quota="team-a", user="bob", resource="cpu") == 1.0  # "*"
    assert sample(metrics, limit, quota="dept", user="sue", resource="cpu") is None  # no limit
    maximum = "elastic_quota_user_max_applications"
    assert sample(metrics, maximum, quota="team-a", user="sue") == 4.0
    assert sample(metrics, maximum, quota="team-a", user="bob") is None  # 0: unlimited


def test_group_twins(world: ControllerState, metrics: Metrics) -> None:
    group = {"quota": "team-a", "group": "dev"}
    assert sample(metrics, "elastic_quota_group_used", **group, resource="cpu") == 1.5
    assert sample(metrics, "elastic_quota_group_applications", **group) == 2.0
    assert sample(metrics, "elastic_quota_group_limit", **group, resource="memory") == 8 * 2**30
    assert sample(metrics, "elastic_quota_group_max_applications", **group) is None


def test_beyond_the_cap_users_are_summed_under_other(
    world: ControllerState, leading: asyncio.Event
) -> None:
    metrics = Metrics()
    metrics.watch(world, leading, users_per_quota=1)

    for quota in ("team-a", "dept"):
        assert subjects(metrics, "elastic_quota_user_used", "user", quota) == {"sue", "(other)"}
    other = {"quota": "team-a", "user": "(other)"}
    assert sample(metrics, "elastic_quota_user_used", **other, resource="cpu") == 0.75
    assert sample(metrics, "elastic_quota_user_applications", **other) == 2.0
    assert sample(metrics, "elastic_quota_user_limit", **other, resource="cpu") is None
    folded = "elastic_quota_user_subjects_folded"
    assert metrics.registry.get_sample_value(folded, {"kind": "user"}) == 4.0  # bob, nobody x 2
    assert metrics.registry.get_sample_value(folded, {"kind": "group"}) == 0.0


def test_a_cap_of_zero_exports_only_the_sums(
    world: ControllerState, leading: asyncio.Event
) -> None:
    metrics = Metrics()
    metrics.watch(world, leading, users_per_quota=0)
    assert subjects(metrics, "elastic_quota_user_used", "user", "team-a") == {"(other)"}
    assert subjects(metrics, "elastic_quota_group_used", "group", "team-a") == {"(other)"}
    other = {"quota": "team-a", "user": "(other)", "resource": "cpu"}
    assert sample(metrics, "elastic_quota_user_used", **other) == 2.25


def test_nothing_per_user_on_a_standby(
    world: ControllerState, metrics: Metrics, leading: asyncio.Event
) -> None:
    leading.clear()
    assert not subjects(metrics, "elastic_quota_user_used", "user", "team-a")
    assert (
        metrics.registry.get_sample_value("elastic_quota_user_subjects_folded", {"kind": "user"})
        is None
    )


def test_a_scrape_shows_the_view_captured_on_the_loop(
    world: ControllerState, metrics: Metrics, leading: asyncio.Event, k8s: Bodies
) -> None:
    """The thread that encodes reads the frozen view: pods counted meanwhile are not seen."""
    view = capture_view(world, leading)
    world.on_pod(running(k8s, "sue-3", "1", "sue", ["dev"]))
    token = SCRAPE_VIEW.set(view)
    try:
        captured = sample(
            metrics, "elastic_quota_user_used", quota="team-a", user="sue", resource="cpu"
        )
    finally:
        SCRAPE_VIEW.reset(token)
    assert captured == 1.5
    now = sample(metrics, "elastic_quota_user_used", quota="team-a", user="sue", resource="cpu")
    assert now == 2.5
