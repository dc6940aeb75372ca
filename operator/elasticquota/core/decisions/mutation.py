"""Defaults filled into a new ElasticQuota (the reference's mutating webhook), purely.

On CREATE, except for ``koordinator-root-quota``: an empty parent label becomes the virtual root
(or the older ``parent-quota-name`` label's value, written under the current key); an empty tree
id is inherited from the parent; a missing shared weight becomes ``spec.max``, and a present one
gets max's keys (missing ones with max's value, extra ones dropped; existing values are kept).
A parent or tree label that is not a valid label value is refused as such (nothing is filled).
The result is the labels and annotations to set, which the Kopf handler writes into its patch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticquota.core import keys
from elasticquota.core.quantities.quantity import QuantityError, format_units, parse_units
from elasticquota.core.validation import (
    ClusterView,
    Violation,
    label_value_violations,
    object_name,
)


@dataclass(frozen=True, slots=True)
class QuotaDefaults:
    """What to set on the new quota, or why it cannot be filled in."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)


def _metadata(raw: Mapping[str, Any], part: str) -> Mapping[str, Any]:
    metadata = raw.get("metadata")
    value = metadata.get(part) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _parent(labels: Mapping[str, Any], set_labels: dict[str, str]) -> str:
    """The parent, writing it under the current key when that one is empty."""
    current = str(labels.get(keys.LABEL_PARENT) or "")
    if current:
        return current
    set_labels[keys.LABEL_PARENT] = keys.parent_quota(labels)
    return set_labels[keys.LABEL_PARENT]


def _canonical_max(raw: Mapping[str, Any]) -> dict[str, Any]:
    """spec.max with each quantity in canonical form (as Go marshals a ResourceList); a value
    that is not a quantity is kept as written (validation refuses it)."""
    spec = raw.get("spec")
    maximum = spec.get("max") if isinstance(spec, Mapping) else None
    result: dict[str, Any] = {}
    for name, value in (maximum if isinstance(maximum, Mapping) else {}).items():
        try:
            result[str(name)] = format_units(str(name), parse_units(str(name), value))
        except QuantityError:
            result[str(name)] = value
    return result


def _dump(values: Mapping[str, Any]) -> str:
    return json.dumps(dict(values), separators=(",", ":"), sort_keys=True)


def _shared_weight(name: str, text: str, maximum: Mapping[str, Any]) -> tuple[str | None, str]:
    """The new annotation value (None: unchanged) and an error message ('' when fine)."""
    if not text:
        return _dump(maximum), ""
    try:
        weight = json.loads(text)
    except json.JSONDecodeError as error:
        weight = error
    if not isinstance(weight, dict):
        return None, (
            f"fill quota {name} failed: annotation {keys.ANNO_SHARED_WEIGHT} is not a JSON "
            f"object of quantities: {text!r}"
        )
    synced = {key: weight.get(key, value) for key, value in maximum.items()}
    return (None if synced == weight else _dump(synced)), ""


def quota_defaults(new: Mapping[str, Any], view: ClusterView) -> QuotaDefaults:
    """The labels and annotations to fill into a quota being created."""
    name = object_name(new)
    if name == keys.ROOT_QUOTA:
        return QuotaDefaults()
    labels, annotations = _metadata(new, "labels"), _metadata(new, "annotations")
    unreadable = label_value_violations(name, labels)
    if unreadable:  # the name cannot be looked up: say what is wrong with it
        return QuotaDefaults(violations=unreadable)
    result = QuotaDefaults()
    parent_name = _parent(labels, result.labels)
    if not labels.get(keys.LABEL_TREE_ID) and parent_name != keys.ROOT_QUOTA:
        parent = view.quota(parent_name)
        if parent is None:
            message = f"fill quota {name} failed, parent not exist (parent {parent_name})"
            result.violations.append(Violation("parent-exists", message))
        elif parent.tree_id:
            result.labels[keys.LABEL_TREE_ID] = parent.tree_id
    text = str(annotations.get(keys.ANNO_SHARED_WEIGHT) or "")
    weight, error = _shared_weight(name, text, _canonical_max(new))
    if error:
        result.violations.append(Violation("shared-weight", error))
    elif weight is not None:
        result.annotations[keys.ANNO_SHARED_WEIGHT] = weight
    return result
