"""Raw objects to models: every key, the aliases, and a problem for every bad
value, naming the object and the field."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from profile_bodies import profile_body
from quota_bodies import quota_body
from raw_objects import raw_pod

from elasticquota.api.parse import (
    parse_node,
    parse_pod,
    parse_profile,
    parse_quota,
    parse_quota_object,
)
from elasticquota.core import keys
from elasticquota.core.model.models import NodeInfo, PodInfo, Problem, ProfileSpec
from elasticquota.core.model.quota import Quota
from elasticquota.core.validation import read_quota

GI = 1024**3
REF = "ElasticQuota team/team"


def quota_raw(
    *,
    labels: dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
    min: dict[str, Any] | None = None,
    max: dict[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """Quota ``team/team`` without a uid, its min 1 cpu and 1Gi and its max 4 cpu and 4Gi unless
    given; ``metadata`` keys are added to its metadata."""
    raw = quota_body(
        "team",
        "team",
        min={"cpu": "1", "memory": "1Gi"} if min is None else min,
        max={"cpu": "4", "memory": "4Gi"} if max is None else max,
        labels=labels,
        annotations=annotations,
        uid=None,
    )
    raw["metadata"] |= metadata
    return raw


T = TypeVar("T")


def quota_of(raw: dict[str, Any]) -> tuple[Quota, list[Problem]]:
    spec, problems = parse_quota(raw)
    assert isinstance(spec, Quota), problems
    return spec, problems


def clean(
    parse: Callable[[dict[str, Any]], tuple[Any, list[Problem]]], raw: dict[str, Any], kind: type[T]
) -> T:
    """What ``parse`` reads from ``raw``, which must be a ``kind`` with no problem."""
    parsed, problems = parse(raw)
    assert problems == [] and isinstance(parsed, kind), problems
    return parsed


def clean_quota(raw: dict[str, Any]) -> Quota:
    return clean(parse_quota, raw, Quota)


def left_out(raw: dict[str, Any]) -> list[Problem]:
    spec, problems = parse_quota(raw)
    assert spec is None
    assert problems
    assert all(problem.object == REF for problem in problems)
    assert problems[-1].message == "the quota is left out of its tree"
    return problems


def messages(problems: list[Problem]) -> str:
    return "\n".join(problem.message for problem in problems)


# -- ElasticQuota: spec -----------------------------------------------------------------------


def test_min_and_max_are_read_in_engine_units() -> None:
    spec = clean_quota(quota_raw(min={"cpu": "500m"}, max={"cpu": 2, "memory": "1.5Gi"}))
    assert (spec.name, spec.namespace) == ("team", "team")
    assert spec.min == {"cpu": 500}
    assert spec.max == {"cpu": 2000, "memory": 3 * GI // 2}


def test_an_empty_spec_is_a_quota_without_min_and_max() -> None:
    raw = quota_raw()
    del raw["spec"]
    spec = clean_quota(raw)
    assert (spec.min, spec.max) == ({}, {})


def test_a_bad_quantity_leaves_the_quota_out_and_names_the_field() -> None:
    problems = left_out(quota_raw(max={"cpu": "four", "memory": "4Gi"}))
    assert problems[0].message.startswith("spec.max.cpu: ")
    assert "'four'" in problems[0].message


def test_one_reading_of_a_bad_quantity_and_two_policies() -> None:
    """The engine and the webhooks read a quota with the same reader into the same ``Quota``;
    only what a bad quantity means differs: the engine leaves the quota out (it keeps its
    name), a webhook refuses it quoting the value as written."""
    raw = quota_raw(min={"cpu": "lots"})
    parse = parse_quota_object(raw)
    judged, violations = read_quota(raw)
    assert parse.quota == judged and parse.quota is not None
    assert not parse.usable
    assert parse.quota.min == {"cpu": 0} and parse.quota.written("min") == {"cpu": "lots"}
    assert [problem.message for problem in parse.problems][
        -1
    ] == "the quota is left out of its tree"
    assert "spec.min.cpu" in parse.problems[0].message
    assert [violation.rule for violation in violations] == ["quantity"]
    assert (
        violations[0].message.startswith("team spec.min.cpu: ") and "lots" in violations[0].message
    )


def test_the_quota_keeps_its_sections_as_written() -> None:
    """What the writer diffs and the rules quote is on the very ``Quota`` the engine solves."""
    raw = quota_raw(labels={keys.LABEL_PARENT: "dept"}, annotations={"note": "x"}, uid="u-1")
    raw["status"] = {"used": {"cpu": "250m"}}
    quota = clean_quota(raw)
    assert quota.parent == "dept" and quota.uid == "u-1"
    assert quota.labels == {keys.LABEL_PARENT: "dept"} and quota.annotations == {"note": "x"}
    assert quota.spec == raw["spec"] and quota.status == raw["status"]
    assert quota.used == {"cpu": 250}
    assert quota.as_manifest()["metadata"]["labels"] == {keys.LABEL_PARENT: "dept"}


def test_a_negative_min_leaves_the_quota_out() -> None:
    problems = left_out(quota_raw(min={"cpu": "-1"}))
    assert "spec.min has negative values in ['cpu']" in messages(problems)


def test_a_negative_max_leaves_the_quota_out() -> None:
    problems = left_out(quota_raw(max={"cpu": "4", "memory": "-1Gi"}))
    assert "spec.max has negative values in ['memory']" in messages(problems)


def test_a_negative_fraction_below_one_unit_is_still_negative() -> None:
    problems = left_out(quota_raw(min={"memory": "-0.5"}))
    assert "spec.min has negative values in ['memory']" in messages(problems)


def test_min_above_max_leaves_the_quota_out_naming_both_fields() -> None:
    problems = left_out(quota_raw(min={"cpu": "5"}, max={"cpu": "4"}))
    assert "spec.min.cpu (5000) is greater than spec.max.cpu (4000)" in messages(problems)


def test_min_keys_outside_max_are_only_noted() -> None:
    spec, problems = quota_of(quota_raw(min={"cpu": "1", "nvidia.com/gpu": "1"}, max={"cpu": "4"}))
    assert spec.min == {"cpu": 1000, "nvidia.com/gpu": 1}
    assert [p.message for p in problems] == [
        "spec.min has keys ['nvidia.com/gpu'] that spec.max lacks; they are not tracked"
    ]
    assert problems[0].object == REF


@pytest.mark.parametrize(
    "metadata",
    [{"namespace": "team"}, {"name": "", "namespace": "team"}, {"name": 7, "namespace": "team"}],
)
def test_a_quota_without_a_usable_name_is_an_invalid_object(metadata: dict[str, Any]) -> None:
    raw = quota_raw()
    raw["metadata"] = metadata
    spec, problems = parse_quota(raw)
    assert spec is None
    assert len(problems) == 1
    assert problems[0].message.startswith("invalid object: metadata.name")
    assert problems[0].object.startswith("ElasticQuota team/")


def test_a_spec_that_is_not_a_mapping_is_an_invalid_object() -> None:
    raw = quota_raw()
    raw["spec"]["min"] = ["1"]
    spec, problems = parse_quota(raw)
    assert spec is None
    assert problems[0].object == REF
    assert problems[0].message.startswith("invalid object: spec.min")


# -- ElasticQuota: labels ---------------------------------------------------------------------


@pytest.mark.parametrize("labels", [{}, {keys.LABEL_PARENT: ""}])
def test_a_missing_or_empty_parent_is_the_virtual_root(labels: dict[str, str]) -> None:
    assert clean_quota(quota_raw(labels=labels)).parent == keys.ROOT_QUOTA


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("True", False), ("yes", False), ("1", False), ("", False), (None, False)],
)
def test_is_parent_is_only_the_string_true(value: str | None, expected: bool) -> None:
    labels = {} if value is None else {keys.LABEL_IS_PARENT: value}
    assert clean_quota(quota_raw(labels=labels)).is_parent is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("false", False), ("False", True), ("no", True), ("true", True), ("", True), (None, True)],
)
def test_only_allow_lent_resource_false_disables_lending(value: str | None, expected: bool) -> None:
    labels = {} if value is None else {keys.LABEL_ALLOW_LENT: value}
    assert clean_quota(quota_raw(labels=labels)).allow_lent is expected


def test_tree_labels_are_read() -> None:
    spec = clean_quota(
        quota_raw(
            labels={
                keys.LABEL_TREE_ID: "1234",
                keys.LABEL_IS_ROOT: "true",
                keys.LABEL_IGNORE_DEFAULT_TREE: "true",
            }
        )
    )
    assert (spec.tree_id, spec.is_root, spec.ignore_default_tree) == ("1234", True, True)


def test_tree_labels_default_to_the_default_tree() -> None:
    spec = clean_quota(quota_raw(labels={keys.LABEL_IS_ROOT: "yes"}))
    assert (spec.tree_id, spec.is_root, spec.ignore_default_tree) == ("", False, False)


def test_a_label_value_that_is_not_a_string_is_an_invalid_object() -> None:
    # An unquoted YAML boolean: the API server would refuse it too.
    spec, problems = parse_quota(quota_raw(labels={keys.LABEL_IS_PARENT: True}))
    assert spec is None
    assert problems[0].object == REF
    assert keys.LABEL_IS_PARENT in problems[0].message


def test_creation_timestamp_is_kept() -> None:
    raw = quota_raw(creationTimestamp="2026-01-02T03:04:05Z")
    assert clean_quota(raw).created == "2026-01-02T03:04:05Z"


# -- ElasticQuota: annotations ----------------------------------------------------------------


def test_shared_weight_is_read_as_a_resource_list() -> None:
    raw = quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"2","memory":"1Gi"}'})
    spec = clean_quota(raw)
    assert spec.shared_weight == {"cpu": 2000, "memory": GI}
    assert spec.effective_weight == {"cpu": 2000, "memory": GI}


def test_shared_weight_accepts_numbers() -> None:
    raw = quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":2,"memory":50}'})
    assert clean_quota(raw).shared_weight == {"cpu": 2000, "memory": 50}


def test_no_shared_weight_means_max() -> None:
    spec = clean_quota(quota_raw())
    assert spec.shared_weight is None
    assert spec.effective_weight == spec.max


def test_an_all_zero_shared_weight_means_max_without_a_problem() -> None:
    spec = clean_quota(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"0"}'}))
    assert spec.effective_weight == spec.max


@pytest.mark.parametrize("text", ['{"cpu":', "[1]", '{"cpu":"heavy"}'])
def test_a_malformed_shared_weight_is_a_problem_and_max_is_used(text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: text}))
    assert spec.shared_weight is None
    assert spec.effective_weight == spec.max
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {keys.ANNO_SHARED_WEIGHT}: ")
    assert problems[0].message.endswith("spec.max is used as the shared weight")


def test_a_negative_shared_weight_is_a_problem_and_max_is_used() -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-1"}'}))
    assert spec.shared_weight is None
    assert [p.message for p in problems] == [
        f"annotation {keys.ANNO_SHARED_WEIGHT}: negative weight; spec.max is used"
    ]


def test_namespaces_is_a_json_list_of_names() -> None:
    raw = quota_raw(annotations={keys.ANNO_NAMESPACES: '["a","b"]'})
    assert clean_quota(raw).namespaces == ("a", "b")


@pytest.mark.parametrize("text", ['["a",', '{"a":1}', '["a",1]', '"a"'])
def test_malformed_namespaces_are_a_problem_and_ignored(text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_NAMESPACES: text}))
    assert spec.namespaces == ()
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {keys.ANNO_NAMESPACES}: ")
    assert problems[0].message.endswith("; ignored")


def test_total_resource_is_read() -> None:
    raw = quota_raw(annotations={keys.ANNO_TOTAL_RESOURCE: '{"cpu":"64","memory":"256Gi"}'})
    assert clean_quota(raw).total_resource == {"cpu": 64_000, "memory": 256 * GI}


def test_a_malformed_total_resource_is_a_problem_and_the_total_is_empty() -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_TOTAL_RESOURCE: "{cpu: 64}"}))
    assert spec.total_resource is None
    assert len(problems) == 1
    assert problems[0].message.startswith(f"annotation {keys.ANNO_TOTAL_RESOURCE}: malformed JSON")
    assert problems[0].message.endswith("the tree's total is taken as empty")


@pytest.mark.parametrize("key", [keys.ANNO_LENDING_LIMIT, keys.ANNO_BORROWING_LIMIT])
def test_lending_and_borrowing_limits_are_read(key: str) -> None:
    spec = clean_quota(quota_raw(annotations={key: '{"cpu":"2"}'}))
    limit = spec.lending_limit if key == keys.ANNO_LENDING_LIMIT else spec.borrowing_limit
    assert limit == {"cpu": 2000}


@pytest.mark.parametrize("key", [keys.ANNO_LENDING_LIMIT, keys.ANNO_BORROWING_LIMIT])
@pytest.mark.parametrize("text", ["{", '{"cpu":"x"}', '{"cpu":"-1"}'])
def test_bad_lending_and_borrowing_limits_are_problems_and_ignored(key: str, text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={key: text}))
    assert (spec.lending_limit, spec.borrowing_limit) == (None, None)
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {key}: ")
    assert problems[0].message.endswith("ignored")


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


# -- Node -------------------------------------------------------------------------------------


def node_raw(
    *, status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None, **metadata: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"pool": "gpu"}, **metadata},
        "spec": spec or {},
        "status": status
        if status is not None
        else {
            "allocatable": {"cpu": "16", "memory": "64Gi"},
            "capacity": {"cpu": "32"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def clean_node(raw: dict[str, Any]) -> NodeInfo:
    return clean(parse_node, raw, NodeInfo)


def test_a_node_offers_its_allocatable() -> None:
    node = clean_node(node_raw())
    assert node.allocatable == {"cpu": 16_000, "memory": 64 * GI}
    assert node.labels == {"pool": "gpu"}
    assert (node.ready, node.unschedulable) == (True, False)


def test_capacity_is_used_when_allocatable_is_unset() -> None:
    node = clean_node(node_raw(status={"capacity": {"cpu": "32", "pods": "110"}}))
    assert node.allocatable == {"cpu": 32_000, "pods": 110}


def test_a_node_without_a_ready_condition_is_not_ready() -> None:
    """As Kubernetes' IsNodeReady: without a Ready condition a node is not ready."""
    assert clean_node(node_raw(status={"allocatable": {"cpu": "16"}})).ready is False


def test_a_node_without_resources_offers_nothing() -> None:
    assert clean_node(node_raw(status={})).allocatable == {}


@pytest.mark.parametrize(
    ("status", "ready"), [("True", True), ("False", False), ("Unknown", False)]
)
def test_the_ready_condition_is_read(status: str, ready: bool) -> None:
    raw = node_raw(
        status={
            "allocatable": {"cpu": "1"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": status},
            ],
        }
    )
    assert clean_node(raw).ready is ready


def test_unschedulable_is_read() -> None:
    assert clean_node(node_raw(spec={"unschedulable": True})).unschedulable


def test_a_node_being_deleted_is_not_counted() -> None:
    node, problems = parse_node(node_raw(deletionTimestamp="2026-11-20T08:00:00Z"))
    assert node is None
    assert [(p.object, p.message) for p in problems] == [
        ("Node /n1", "node is being deleted; not counted")
    ]


def test_a_bad_allocatable_quantity_leaves_the_node_out() -> None:
    node, problems = parse_node(node_raw(status={"allocatable": {"cpu": "sixteen"}}))
    assert node is None
    assert problems[0].object == "Node /n1"
    assert problems[0].message.startswith("status.allocatable.cpu: ")
    assert problems[-1].message == "the node is not counted"


# -- ElasticQuotaProfile ----------------------------------------------------------------------


def profile_raw(
    *,
    annotations: dict[str, Any] | None = None,
    labels: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Profile ``gpu/gpu-pool`` of a parent root quota, with a resource ratio and a match
    expression besides its match labels; ``spec`` replaces its spec."""
    raw = profile_body(
        "gpu-pool",
        "gpu",
        quota_name="gpu-root",
        match_labels={"pool": "gpu"},
        quota_labels={keys.LABEL_IS_PARENT: "true"},
        labels=labels,
        annotations=annotations,
    )
    raw["spec"]["resourceRatio"] = "0.9"
    raw["spec"]["nodeSelector"]["matchExpressions"] = [
        {"key": "zone", "operator": "In", "values": ["a", "b"]}
    ]
    if spec is not None:
        raw["spec"] = spec
    return raw


def test_a_profile_is_read_with_its_selector_labels_and_ratio() -> None:
    profile, problems = parse_profile(profile_raw(labels={keys.LABEL_TREE_ID: "42"}))
    assert problems == []
    assert isinstance(profile, ProfileSpec)
    assert (profile.name, profile.namespace, profile.quota_name) == ("gpu-pool", "gpu", "gpu-root")
    assert profile.match_labels == {"pool": "gpu"}
    assert [(r.key, r.operator, r.values) for r in profile.match_expressions] == [
        ("zone", "In", ("a", "b"))
    ]
    assert profile.quota_labels == {keys.LABEL_IS_PARENT: "true"}
    assert profile.resource_ratio == "0.9"
    assert profile.tree_id_label == "42"
    assert profile.resource_keys == ("cpu", "memory")


def test_the_resource_keys_annotation_lists_the_root_quota_resources() -> None:
    raw = profile_raw(annotations={keys.ANNO_RESOURCE_KEYS: '["cpu","memory","nvidia.com/gpu"]'})
    profile, problems = parse_profile(raw)
    assert problems == []
    assert profile.resource_keys == ("cpu", "memory", "nvidia.com/gpu")


def test_a_malformed_resource_keys_annotation_is_a_problem_and_the_default_is_used() -> None:
    profile, problems = parse_profile(profile_raw(annotations={keys.ANNO_RESOURCE_KEYS: "cpu"}))
    assert profile.resource_keys == ("cpu", "memory")
    assert len(problems) == 1
    assert problems[0].object == "ElasticQuotaProfile gpu/gpu-pool"
    assert problems[0].message.endswith("using ['cpu', 'memory']")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"nodeSelector": {"matchLabels": {"pool": "gpu"}}}, "spec.quotaName"),
        ({"quotaName": "", "nodeSelector": {}}, "spec.quotaName"),
        ({"quotaName": "gpu-root"}, "spec.nodeSelector"),
    ],
)
def test_quota_name_and_node_selector_are_required(spec: dict[str, Any], field: str) -> None:
    profile, problems = parse_profile(profile_raw(spec=spec))
    assert profile is None
    assert len(problems) == 1
    assert problems[0].object == "ElasticQuotaProfile gpu/gpu-pool"
    assert problems[0].message.startswith(f"invalid object: {field}")
