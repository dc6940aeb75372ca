"""What to write back: desired annotations and ``status.used`` against what the object has.

The reference's rules: the annotations ``runtime``, ``request``, ``child-request``,
``non-preemptible-request`` and ``non-preemptible-used`` hold JSON ResourceLists; a value is
rewritten only when it differs from the current one after removing zero entries (so an unchanged
quota is never written, and a restart writes nothing). ``status.used`` follows the same rule; as it
is written with a JSON merge patch (which merges maps), keys it no longer has are sent as ``null``
so that they are deleted. The virtual root's ``runtime`` is the tree's distributable total (the
reference leaves it unwritten); the system and default quotas get no ``runtime`` (they are not
limited).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.core import keys
from elasticquota.core.quantity import QuantityError
from elasticquota.core.resources import (
    ResourceList,
    drop_zeros,
    format_resource_list,
    parse_resource_list,
    parse_resource_list_json,
    to_annotation,
)
from elasticquota.core.results import QuotaResult

#: Annotation key -> the QuotaResult field written into it.
WRITTEN_ANNOTATIONS: Mapping[str, str] = {
    keys.ANNO_RUNTIME: "runtime",
    keys.ANNO_REQUEST: "request",
    keys.ANNO_CHILD_REQUEST: "child_request",
    keys.ANNO_NON_PREEMPTIBLE_REQUEST: "non_preemptible_request",
    keys.ANNO_NON_PREEMPTIBLE_USED: "non_preemptible_used",
}


@dataclass(frozen=True, slots=True)
class QuotaWrite:
    """The changes one quota needs: annotations to set, and the new ``status.used`` if any."""

    namespace: str
    name: str
    annotations: dict[str, str]
    #: The new ``status.used``; a key whose value is None is to be deleted (merge-patch null).
    used: dict[str, str | None] | None

    @property
    def empty(self) -> bool:
        return not self.annotations and self.used is None


def _same(current: ResourceList | None, desired: Mapping[str, int]) -> bool:
    return current is not None and drop_zeros(current) == drop_zeros(desired)


def _current_annotation(annotations: Mapping[str, str], key: str) -> ResourceList | None:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        return parse_resource_list_json(text)
    except QuantityError:
        return None  # unreadable: rewrite it


def _current_used(status: Mapping[str, Any] | None) -> ResourceList | None:
    used = (status or {}).get("used")
    if not isinstance(used, Mapping):
        return None
    try:
        return parse_resource_list(used)
    except QuantityError:
        return None


def quota_write(
    result: QuotaResult, annotations: Mapping[str, str], status: Mapping[str, Any] | None
) -> QuotaWrite:
    """The write that brings one quota object in line with its result (possibly empty)."""
    changes: dict[str, str] = {}
    for key, field in WRITTEN_ANNOTATIONS.items():
        if key == keys.ANNO_RUNTIME and result.name in (keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA):
            continue
        desired: ResourceList = getattr(result, field)
        if not _same(_current_annotation(annotations, key), desired):
            changes[key] = to_annotation(desired)
    used: dict[str, str | None] | None = None
    if not _same(_current_used(status), result.used):
        current = (status or {}).get("used")
        stale = (
            [key for key in current if key not in result.used]
            if isinstance(current, Mapping)
            else []
        )
        used = {**dict.fromkeys(stale), **format_resource_list(result.used)}
    return QuotaWrite(result.namespace, result.name, changes, used)
