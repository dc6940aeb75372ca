"""ElasticQuotas to models, their spec: min and max in engine units, the sections kept as
written, and a problem for every bad value, naming the quota and the field."""

from __future__ import annotations

from typing import Any

import pytest
from parse_checks import GI, REF, clean_quota, left_out, messages, quota_of, quota_raw

from elasticquota.api.parse import parse_quota, parse_quota_object
from elasticquota.core import keys
from elasticquota.core.validation import read_quota

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
    assert "spec.min has negative values: cpu -1" in messages(problems)


def test_a_negative_max_leaves_the_quota_out() -> None:
    problems = left_out(quota_raw(max={"cpu": "4", "memory": "-1Gi"}))
    assert "spec.max has negative values: memory -1Gi" in messages(problems)


def test_a_negative_fraction_below_one_unit_is_still_negative() -> None:
    problems = left_out(quota_raw(min={"memory": "-0.5"}))
    assert "spec.min has negative values: memory -0.5" in messages(problems)


def test_min_above_max_leaves_the_quota_out_naming_both_fields() -> None:
    problems = left_out(quota_raw(min={"cpu": "5"}, max={"cpu": "4"}))
    assert "spec.min.cpu (5) is greater than spec.max.cpu (4)" in messages(problems)


def test_min_above_max_names_the_quantities_as_kubernetes_writes_them() -> None:
    """Not the engine's units (milli-cpu, bytes): what the user wrote, canonical."""
    raw = quota_raw(min={"cpu": "1500m", "memory": "2Gi"}, max={"cpu": "1", "memory": "1536Mi"})
    assert messages(left_out(raw)).splitlines()[:2] == [
        "spec.min.cpu (1500m) is greater than spec.max.cpu (1)",
        "spec.min.memory (2Gi) is greater than spec.max.memory (1536Mi)",
    ]


def test_min_above_max_writes_amounts_of_bytes_with_their_suffix_not_as_a_count_of_bytes() -> None:
    """ephemeral-storage's canonical form is a count of bytes (32212254720 for 30Gi), and memory
    written in decimal suffixes has no exact binary one (30G is 29296875Ki): the message says
    what was written."""
    raw = quota_raw(
        min={"ephemeral-storage": "30Gi", "memory": "30G"},
        max={"ephemeral-storage": "20Gi", "memory": "25G"},
    )
    assert messages(left_out(raw)).splitlines()[:2] == [
        "spec.min.ephemeral-storage (30Gi) is greater than spec.max.ephemeral-storage (20Gi)",
        "spec.min.memory (30G) is greater than spec.max.memory (25G)",
    ]


def test_min_keys_outside_max_are_only_noted() -> None:
    spec, problems = quota_of(quota_raw(min={"cpu": "1", "nvidia.com/gpu": "1"}, max={"cpu": "4"}))
    assert spec.min == {"cpu": 1000, "nvidia.com/gpu": 1}
    assert [p.message for p in problems] == [
        "spec.min has keys that spec.max lacks (nvidia.com/gpu); they are not tracked"
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
