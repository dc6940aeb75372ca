"""Pod admission: no pods in parent quotas, the preemptible label cannot change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.validation.facts import (
    Violation,
    mapping_or_empty,
    object_name,
)
from elasticquota.core.validation.view import ClusterView


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping_or_empty(mapping_or_empty(raw.get("metadata")).get("labels"))


def pod_quota(pod: Mapping[str, Any], view: ClusterView) -> str:
    """The quota a pod belongs to (README "Pod → quota"): an unknown quota means the default."""
    labels = _labels(pod)
    namespace = str(mapping_or_empty(pod.get("metadata")).get("namespace") or "")
    label = keys.first_label(labels, keys.POD_LABEL_QUOTA_ALIASES)
    if label:
        return label if view.quota(label) is not None else keys.DEFAULT_QUOTA
    same_name = view.quota_at(namespace, namespace)
    if same_name is not None:
        return same_name.name
    return view.namespace_owner(namespace) or keys.DEFAULT_QUOTA


def validate_pod(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, view: ClusterView
) -> list[Violation]:
    """No pods in parent quotas; the ``preemptible`` label never changes.

    Deviation: an UPDATE that leaves the pod in the same quota is not refused for being in a
    parent quota (the reference re-checks every update): a pod admitted before the webhooks, or
    before its quota became a parent, must still be able to drop a finalizer or a scheduling gate.
    """
    found = []
    name = object_name(new)
    quota_name = pod_quota(new, view)
    quota = view.quota(quota_name) if quota_name != keys.DEFAULT_QUOTA else None
    moved = old is None or pod_quota(old, view) != quota_name
    if quota is not None and quota.is_parent and moved:
        found.append(
            Violation(
                "pod-in-parent",
                f"pod can not be linked to a parentQuotaGroup,quota:{quota_name}, pod:{name}",
            )
        )
    if old is not None:
        key = keys.POD_LABEL_PREEMPTIBLE
        before, after = _labels(old).get(key) or "", _labels(new).get(key) or ""
        if before != after:
            found.append(
                Violation(
                    "preemptible-label",
                    f"Preemptible label is forbidden modify now. (pod {name}: {key} "
                    f"{before!r} -> {after!r})",
                )
            )
    return found
