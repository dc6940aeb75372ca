"""The quota trees as the operator last wrote them, read back from ElasticQuota objects.

``elastic-quota tree`` lists the objects and renders this snapshot with ``plan``'s table: min and
max from the spec, request / used / runtime from the annotations and ``status.used`` the operator
writes; a profile's tree is named after the profile its root quota is labelled with. Unreadable
values show as absent rather than stopping the view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.quantities.quantity import QuantityError
from elasticquota.core.quantities.resources import (
    ResourceList,
    parse_resource_list,
    parse_resource_list_json,
)
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.core.tree.profiles import tree_profiles


def _list(raw: Any) -> ResourceList:
    try:
        return parse_resource_list(raw if isinstance(raw, Mapping) else {})
    except QuantityError:
        return {}


def _annotation(annotations: Mapping[str, str], key: str) -> ResourceList:
    try:
        return parse_resource_list_json(annotations[key]) if key in annotations else {}
    except QuantityError:
        return {}


def _parent_label(labels: Mapping[str, str]) -> str:
    """The parent label, or its older alias (as ``api.parse`` reads it); "" when absent."""
    return keys.parent_label(labels)


def _result(body: Mapping[str, Any], tree: str) -> QuotaResult:
    metadata = body.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    spec = body.get("spec") or {}
    name = str(metadata.get("name", ""))
    parent = "" if name == keys.ROOT_QUOTA else _parent_label(labels) or keys.ROOT_QUOTA
    request = _annotation(annotations, keys.ANNO_REQUEST)
    return QuotaResult(
        name=name,
        namespace=str(metadata.get("namespace", "")),
        tree=tree,
        parent=parent,
        is_parent=labels.get(keys.LABEL_IS_PARENT) == "true",
        min=_list(spec.get("min")),
        max=_list(spec.get("max")),
        effective_min={},
        shared_weight=_annotation(annotations, keys.ANNO_SHARED_WEIGHT),
        request=request,
        child_request=_annotation(annotations, keys.ANNO_CHILD_REQUEST),
        limited_request=request,
        used=_list((body.get("status") or {}).get("used")),
        runtime=_annotation(annotations, keys.ANNO_RUNTIME),
        non_preemptible_request=_annotation(annotations, keys.ANNO_NON_PREEMPTIBLE_REQUEST),
        non_preemptible_used=_annotation(annotations, keys.ANNO_NON_PREEMPTIBLE_USED),
        reserved=name in keys.RESERVED_QUOTAS,
    )


def _trees(bodies: list[Mapping[str, Any]]) -> dict[str, str]:
    """Each quota's tree: its label, else its parent's (as the admission webhook fills it)."""
    labels = {
        str((b.get("metadata") or {}).get("name", "")): (b.get("metadata") or {}).get("labels")
        or {}
        for b in bodies
    }

    def tree_of(name: str, seen: frozenset[str] = frozenset()) -> str:
        own = labels.get(name, {})
        if own.get(keys.LABEL_TREE_ID) or name in seen:
            return str(own.get(keys.LABEL_TREE_ID, ""))
        parent = _parent_label(own) or keys.ROOT_QUOTA
        if parent == keys.ROOT_QUOTA or parent not in labels:
            return ""
        return tree_of(parent, seen | {name})

    return {name: tree_of(name) for name in labels}


def live_snapshot(objects: Iterable[Mapping[str, Any]]) -> Snapshot:
    """A renderable snapshot of the quota objects as they are in the cluster."""
    bodies = list(objects)
    trees = _trees(bodies)
    quotas = {}
    totals: dict[str, ResourceList] = {"": {}}
    for body in bodies:
        result = _result(body, trees[str((body.get("metadata") or {}).get("name", ""))])
        quotas[result.name] = result
        totals.setdefault(result.tree, {})  # a tree without a total is still drawn
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        if result.name == keys.ROOT_QUOTA:
            totals[""] = result.runtime
        elif keys.ANNO_TOTAL_RESOURCE in annotations:
            totals[result.tree] = _annotation(annotations, keys.ANNO_TOTAL_RESOURCE)
    return Snapshot(
        quotas=quotas,
        totals=totals,
        pods={},
        pod_quota={},
        pods_by_quota={},
        tree_profiles=tree_profiles(bodies),
    )
