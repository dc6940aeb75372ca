"""ElasticQuotaProfiles to models: the selector, labels, ratio and resource keys, and a problem
for every bad or missing value, naming the profile and the field."""

from __future__ import annotations

from typing import Any

import pytest
from profile_bodies import profile_body

from elasticquota.api.parse import parse_profile
from elasticquota.core import keys
from elasticquota.core.model.models import ProfileSpec
from elasticquota.core.tree.profiles import root_quota_manifest

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
    assert profile.node_selector.match_labels == {"pool": "gpu"}
    assert [(r.key, r.operator, r.values) for r in profile.node_selector.match_expressions] == [
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


def test_an_empty_resource_keys_list_gives_the_root_quota_no_resources() -> None:
    """The default applies only when the annotation is absent (or unreadable): ``[]`` is a list,
    and the reference's root quota then has an empty min and max (reference §5 step 5)."""
    profile, problems = parse_profile(profile_raw(annotations={keys.ANNO_RESOURCE_KEYS: "[]"}))
    assert problems == []
    assert profile.resource_keys == ()
    assert root_quota_manifest(profile, [])["spec"] == {"min": {}, "max": {}}


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
