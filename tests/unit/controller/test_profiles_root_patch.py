"""The profile controller's patch of a root quota (``root_quota_patch``).

Rules (controller/reconcile/profiles.py): nothing is patched when the root matches
``core.tree.profiles.root_quota_manifest`` (quantities compared as quantities, other labels and
annotations left alone); otherwise only the labels and the two annotations the controller owns
that differ, and the spec when min or max differ; a resource the profile no longer has is sent
as null (a JSON merge patch merges maps).
"""

from __future__ import annotations

from typing import Any

from elasticquota.controller.reconcile.profiles import root_quota_patch
from elasticquota.core import keys
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import read_quota


def quota_object(**parts: Any) -> Quota:
    body = {
        "metadata": {
            "name": "gpu-root",
            "namespace": "team",
            "labels": parts.get("labels", {}),
            "annotations": parts.get("annotations", {}),
        },
        "spec": parts.get("spec", {}),
    }
    return read_quota(body).quota


def manifest(**spec: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "labels": {keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "42"},
            "annotations": {
                keys.ANNO_TOTAL_RESOURCE: '{"cpu":"8"}',
                keys.ANNO_UNSCHEDULABLE_RESOURCE: "{}",
                "example.com/note": "kept as it is",
            },
        },
        "spec": {"min": spec.get("min", {"cpu": "8"}), "max": spec.get("max", {"cpu": "100"})},
    }


def test_a_matching_root_needs_no_patch() -> None:
    current = quota_object(
        labels={keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "42", "team": "x"},
        annotations={
            keys.ANNO_TOTAL_RESOURCE: '{"cpu":"8"}',
            keys.ANNO_UNSCHEDULABLE_RESOURCE: "{}",
        },
        spec={"min": {"cpu": "8000m"}, "max": {"cpu": 100}},  # same quantities, other notation
    )
    assert root_quota_patch(manifest(), current) is None


def test_only_differing_labels_and_owned_annotations_are_patched() -> None:
    current = quota_object(
        labels={keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "41"},
        annotations={
            keys.ANNO_TOTAL_RESOURCE: '{"cpu":"4"}',
            keys.ANNO_UNSCHEDULABLE_RESOURCE: "{}",
        },
        spec={"min": {"cpu": "8"}, "max": {"cpu": "100"}},
    )
    assert root_quota_patch(manifest(), current) == {
        "metadata": {
            "labels": {keys.LABEL_TREE_ID: "42"},
            "annotations": {keys.ANNO_TOTAL_RESOURCE: '{"cpu":"8"}'},
        }
    }


def test_a_different_min_or_max_patches_the_spec() -> None:
    labels = {keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "42"}
    annotations = {keys.ANNO_TOTAL_RESOURCE: '{"cpu":"8"}', keys.ANNO_UNSCHEDULABLE_RESOURCE: "{}"}
    current = quota_object(
        labels=labels, annotations=annotations, spec={"min": {"cpu": "4"}, "max": {"cpu": "100"}}
    )
    assert root_quota_patch(manifest(), current) == {
        "spec": {"min": {"cpu": "8"}, "max": {"cpu": "100"}}
    }


def test_a_spec_key_the_profile_no_longer_has_is_deleted_by_the_patch() -> None:
    """Merge patches merge maps: a resource dropped from the profile's keys must be sent as null."""
    labels = {keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "42"}
    annotations = {keys.ANNO_TOTAL_RESOURCE: '{"cpu":"8"}', keys.ANNO_UNSCHEDULABLE_RESOURCE: "{}"}
    spec = {
        "min": {"cpu": "8", "nvidia.com/gpu": "4"},
        "max": {"cpu": "100", "nvidia.com/gpu": "9"},
    }
    current = quota_object(labels=labels, annotations=annotations, spec=spec)

    patch = root_quota_patch(manifest(), current)

    assert patch is not None
    assert patch["spec"]["min"] == {"cpu": "8", "nvidia.com/gpu": None}
    assert patch["spec"]["max"] == {"cpu": "100", "nvidia.com/gpu": None}
