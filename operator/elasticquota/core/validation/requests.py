"""ElasticQuota CREATE / UPDATE / DELETE: the order in which the rules run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.quota import Quota
from elasticquota.core.validation.facts import (
    WATCHED_ANNOTATIONS,
    WATCHED_LABELS,
    Violation,
    mapping_or_empty,
    read_quota,
)
from elasticquota.core.validation.labels import label_value_violations
from elasticquota.core.validation.messages import some_names
from elasticquota.core.validation.self_item import (
    self_item_violations,
)
from elasticquota.core.validation.topology import (
    topology_violations,
)
from elasticquota.core.validation.userlimits import user_limit_violations
from elasticquota.core.validation.view import ClusterView


def _namespaces_free(quota: Quota, view: ClusterView, operation: str) -> list[Violation]:
    found = []
    for namespace in quota.namespaces:
        owner = view.namespace_owner(namespace)
        if owner is None or owner == quota.name:
            continue
        if operation == "CREATE":
            message = (
                f"AddQuota quota {quota.name}'s annotation namespace {namespace} is already "
                f"bound to quota {owner}"
            )
        else:
            message = (
                f"UpdateQuota, quota {quota.name} update namespaces, but namespace {namespace} "
                f"is already bound to quota {owner}"
            )
        found.append(Violation("namespaces-unique", message))
    return found


def validate_quota_create(new: Mapping[str, Any], view: ClusterView) -> list[Violation]:
    """CREATE: a new name, free namespaces, then the self-item and topology checks."""
    quota, found = read_quota(new)
    existing = view.quota(quota.name)
    if existing is not None:
        found.append(
            Violation(
                "name-unique",
                f"AddQuota quota already exist:{quota.name} (quota {quota.name} in namespace "
                f"{quota.namespace}: a quota {quota.name} already exists in namespace "
                f"{existing.namespace}; quota names are unique across namespaces)",
            )
        )
    found += _namespaces_free(quota, view, "CREATE")
    found += self_item_violations(quota)
    unreadable = label_value_violations(quota.name, quota.labels)
    found += unreadable or topology_violations(quota, None, view)
    found += user_limit_violations(quota, None, view)
    return found


def quota_unchanged(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """UPDATE, first: nothing the rules look at changed (annotation and status writes pass)."""

    def watched(raw: Mapping[str, Any]) -> tuple[Any, ...]:
        metadata = mapping_or_empty(raw.get("metadata"))
        labels = mapping_or_empty(metadata.get("labels"))
        annotations = mapping_or_empty(metadata.get("annotations"))
        return (
            tuple(labels.get(key) or "" for key in WATCHED_LABELS),
            tuple(annotations.get(key) or "" for key in WATCHED_ANNOTATIONS),
            dict(mapping_or_empty(raw.get("spec"))),
        )

    return watched(old) == watched(new)


def validate_quota_update(
    old: Mapping[str, Any], new: Mapping[str, Any], view: ClusterView
) -> list[Violation]:
    """UPDATE: reserved quotas are frozen, namespaces stay unique, then the checks against the
    stored copy."""
    if quota_unchanged(old, new):
        return []
    quota, found = read_quota(new)
    if quota.name in (keys.ROOT_QUOTA, keys.SYSTEM_QUOTA):
        return [
            Violation(
                "reserved-update",
                f"invalid quota {quota.name}: the root and system quotas cannot be updated",
            )
        ]
    found += _namespaces_free(quota, view, "UPDATE")
    stored = view.quota_at(quota.namespace, quota.name)
    if stored is None:
        found.append(
            Violation("known", f"UpdateQuota quota not exist in quotaInfoMap:{quota.name}")
        )
        return found
    old_namespaces = read_quota(old)[0].namespaces
    found += self_item_violations(quota)
    unreadable = label_value_violations(quota.name, quota.labels)
    found += unreadable or topology_violations(quota, stored, view, old_namespaces)
    found += user_limit_violations(quota, stored, view)
    return found


def validate_quota_delete(old: Mapping[str, Any], view: ClusterView) -> list[Violation]:
    """DELETE: reserved quotas stay; a quota with child quotas or labelled pods stays."""
    quota = read_quota(old)[0]
    name = quota.name
    if name in keys.RESERVED_QUOTAS:
        return [Violation("reserved-delete", f"can not delete quotaGroup :{name}")]
    if view.quota_at(quota.namespace, name) is None:
        return [Violation("known", f"not found quota:{name}")]
    if not view.owns_name(quota):
        return []  # left out for sharing a name: the children and pods are the owner's
    found = []
    children = view.children(name)
    if children:
        found.append(
            Violation(
                "delete-children",
                f"delete quota failed, quota {name} has {len(children)} child quotas: "
                f"{', '.join(children)}",
            )
        )
    pods = view.pods_labelled(name)
    if pods:
        found.append(
            Violation(
                "delete-pods",
                f"delete quota failed, quota {name} has {len(pods)} child pods: "
                f"{some_names([pod.key for pod in pods])}",
            )
        )
    return found
