"""Raw ElasticQuota objects as the API server holds them (quantities as strings).

Shared by the controller tests (``Bodies.quota``) and the validation tests, so that the labels a
parent, a parent flag or a tree id are written with are spelled in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticquota.core import keys


def quota_body(
    name: str,
    namespace: str = "team",
    *,
    min: Mapping[str, Any] | None = None,
    max: Mapping[str, Any] | None = None,
    parent: str | None = None,
    is_parent: bool = False,
    tree: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    uid: str | None = "",
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ElasticQuota; ``parent``, ``is_parent`` and ``tree`` become their labels. ``uid``:
    ``uid-<namespace>-<name>`` unless given; None: none."""
    all_labels = dict(labels or {})
    if parent is not None:
        all_labels[keys.LABEL_PARENT] = parent
    if is_parent:
        all_labels[keys.LABEL_IS_PARENT] = "true"
    if tree is not None:
        all_labels[keys.LABEL_TREE_ID] = tree
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        metadata["uid"] = uid or f"uid-{namespace}-{name}"
    metadata |= {"labels": all_labels, "annotations": dict(annotations or {})}
    body: dict[str, Any] = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": metadata,
        "spec": {"min": dict(min or {}), "max": dict(max or {})},
    }
    if status is not None:
        body["status"] = dict(status)
    return body
