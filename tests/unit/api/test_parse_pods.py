"""Pods to models: every key, the label aliases (a quota's parent label's too), and a problem for
every bad value, naming the pod and the field."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from parse_checks import clean, clean_quota, quota_raw
from raw_objects import raw_pod

from elasticquota.api.parse import parse_pod
from elasticquota.core import keys
from elasticquota.core.model.models import PodInfo

# -- Pod --------------------------------------------------------------------------------------


def clean_pod(raw: dict[str, Any]) -> PodInfo:
    return clean(parse_pod, raw, PodInfo)


def test_a_minimal_pod_is_pending_preemptible_priority_zero_without_quota_label() -> None:
    pod = clean_pod(raw_pod())
    assert pod.key == "ns/p"
    assert pod.requests == {"cpu": 1000}
    assert (pod.quota_label, pod.preemptible, pod.priority) == ("", True, 0)
    assert (pod.phase, pod.node_name, pod.start_time) == ("Pending", "", None)
    assert not pod.is_assigned


def test_the_creation_time_is_kept_to_name_the_pod_evictions_and_gate_releases_are_about() -> None:
    raw = raw_pod()
    assert clean_pod(raw).created == ""  # none in the body: nothing to check
    raw["metadata"]["creationTimestamp"] = "2026-11-27T10:00:00Z"
    assert clean_pod(raw).created == "2026-11-27T10:00:00Z"


def parent_of(labels: dict[str, str]) -> str:
    return clean_quota(quota_raw(labels=labels)).parent


def quota_label_of(labels: dict[str, str]) -> str:
    return clean_pod(raw_pod(labels=labels)).quota_label


PARENT, PARENT_ALIAS = keys.LABEL_PARENT, f"{keys.PREFIX}/parent-quota-name"
QUOTA, QUOTA_ALIAS = keys.POD_LABEL_QUOTA, f"{keys.PREFIX}/quota-name"


@pytest.mark.parametrize(
    ("read", "labels", "expected"),
    [
        (parent_of, {PARENT: "eng"}, "eng"),
        (parent_of, {PARENT_ALIAS: "eng"}, "eng"),
        (parent_of, {PARENT: "eng", PARENT_ALIAS: "old"}, "eng"),
        (quota_label_of, {QUOTA: "team"}, "team"),
        (quota_label_of, {QUOTA_ALIAS: "team"}, "team"),
        (quota_label_of, {QUOTA: "new", QUOTA_ALIAS: "old"}, "new"),
    ],
)
def test_a_label_names_its_object_its_older_alias_too_and_the_label_wins(
    read: Callable[[dict[str, str]], str], labels: dict[str, str], expected: str
) -> None:
    """A quota's parent label and a pod's quota label, each with the older name it replaced."""
    assert read(labels) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [("false", False), ("False", True), ("true", True), ("no", True)]
)
def test_only_preemptible_false_makes_a_pod_non_preemptible(value: str, expected: bool) -> None:
    raw = raw_pod(labels={keys.POD_LABEL_PREEMPTIBLE: value})
    assert clean_pod(raw).preemptible is expected


def test_priority_phase_node_and_start_time_are_read() -> None:
    pod = clean_pod(
        raw_pod(
            spec={"priority": 100, "nodeName": "node-1"},
            status={"phase": "Running", "startTime": "2026-11-20T08:00:00Z"},
        )
    )
    assert (pod.priority, pod.phase, pod.node_name) == (100, "Running", "node-1")
    assert pod.start_time == 1_795_161_600.0
    assert pod.is_assigned


@pytest.mark.parametrize(
    "text", ["2026-11-20T08:00:00", "2026-11-20T09:00:00+01:00", "2026-11-20T08:00:00.000Z"]
)
def test_start_time_does_not_depend_on_the_local_time_zone(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert clean_pod(raw_pod(status={"startTime": text})).start_time == 1_795_161_600.0
    finally:
        monkeypatch.undo()
        time.tzset()


def test_an_unreadable_start_time_counts_as_none() -> None:
    assert clean_pod(raw_pod(status={"startTime": "yesterday"})).start_time is None


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_hold_nothing_even_on_a_node(phase: str) -> None:
    pod = clean_pod(raw_pod(spec={"nodeName": "node-1"}, status={"phase": phase}))
    assert not pod.is_assigned
    assert not pod.counts_in_request


def test_a_container_bad_quantity_leaves_the_pod_out_naming_container_and_resource() -> None:
    raw = raw_pod(spec={"containers": [{"name": "web", "resources": {"limits": {"memory": "x"}}}]})
    pod, problems = parse_pod(raw)
    assert pod is None
    assert len(problems) == 1
    assert problems[0].object == "Pod ns/p"
    assert "container 'web' memory" in problems[0].message
    assert problems[0].message.endswith("the pod is not accounted")


def test_a_bad_overhead_leaves_the_pod_out_naming_the_overhead() -> None:
    pod, problems = parse_pod(raw_pod(spec={"overhead": {"cpu": "fast"}}))
    assert pod is None
    assert problems[0].object == "Pod ns/p"
    assert "spec.overhead cpu" in problems[0].message


def test_a_priority_that_is_not_a_number_is_an_invalid_object() -> None:
    pod, problems = parse_pod(raw_pod(spec={"priority": "high"}))
    assert pod is None
    assert problems[0].object == "Pod ns/p"
    assert problems[0].message.startswith("invalid object: spec.priority")
