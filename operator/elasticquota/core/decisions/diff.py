"""What to write back: desired annotations and ``status.used`` against what the object has.

The reference's rules: the annotations ``runtime``, ``request``, ``child-request``,
``non-preemptible-request`` and ``non-preemptible-used`` hold JSON ResourceLists; a value is
rewritten only when it differs from the current one after removing zero entries (so an unchanged
quota is never written, and a restart writes nothing). ``status.used`` follows the same rule; as it
is written with a JSON merge patch (which merges maps), keys it no longer has are sent as ``null``
so that they are deleted. A value that holds exactly the text we would write (and that text reads
back exactly) is the same without parsing it: a diff of an unchanged quota costs the encoding of
its figures only. The virtual root's ``runtime`` is the tree's distributable total (the
reference leaves it unwritten); the system and default quotas get no ``runtime`` (they are not
limited).

A quota left out of its tree (it breaks a rule: min above max, a missing parent, a duplicated
name...; the webhooks refuse these, but they were off, installed late, or the object is older than
them) has no result: its old figures must not stay on it for consumers to trust. ``invalid_write``
removes what the computation writes there (the keys Koordinator's status worker writes:
``runtime``, ``request``, ``child-request``, ``guaranteed``, ``allocated``,
``non-preemptible-request``, ``non-preemptible-used``; ``status.used``; the revocation timer's
``elasticquota.dev/over-used-since``) and sets ``elasticquota.dev/invalid`` to the problems found
on it. Once the quota is valid again it has a result, and ``quota_write`` writes its figures back
and removes the marker. Both write only what differs from the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.core import keys
from elasticquota.core.decisions.overuse import ANNO_OVER_USED_SINCE
from elasticquota.core.model.models import Problem
from elasticquota.core.quantities.quantity import QuantityError
from elasticquota.core.quantities.resources import (
    ResourceList,
    drop_zeros,
    format_resource_list,
    parse_resource_list,
    parse_resource_list_json,
    to_annotation,
)
from elasticquota.core.solve.results import QuotaResult

MAX_INT64 = 2**63 - 1

#: Annotation key -> the QuotaResult field written into it.
WRITTEN_ANNOTATIONS: Mapping[str, str] = {
    keys.ANNO_RUNTIME: "runtime",
    keys.ANNO_REQUEST: "request",
    keys.ANNO_CHILD_REQUEST: "child_request",
    keys.ANNO_NON_PREEMPTIBLE_REQUEST: "non_preemptible_request",
    keys.ANNO_NON_PREEMPTIBLE_USED: "non_preemptible_used",
}


#: Every ``QuotaResult`` field a write depends on (with the quota's name and namespace).
WRITTEN_FIELDS = (*WRITTEN_ANNOTATIONS.values(), "used")

#: What a quota left out of its tree must not keep: every annotation computed from its tree.
CLEARED_WHEN_INVALID = (
    keys.ANNO_RUNTIME,
    keys.ANNO_REQUEST,
    keys.ANNO_CHILD_REQUEST,
    keys.ANNO_GUARANTEED,
    keys.ANNO_ALLOCATED,
    keys.ANNO_NON_PREEMPTIBLE_REQUEST,
    keys.ANNO_NON_PREEMPTIBLE_USED,
    ANNO_OVER_USED_SINCE,
)

#: Annotations the operator writes: none of them is read into a quota's spec.
OPERATOR_ANNOTATIONS = frozenset({*WRITTEN_ANNOTATIONS, *CLEARED_WHEN_INVALID, keys.ANNO_INVALID})

#: The end of a problem's message when the quota is left out
#: (``core.tree.topology``, ``api.parse``).
LEFT_OUT = "the quota is left out of its tree"
#: Longest ``elasticquota.dev/invalid`` value written (annotations share 256 KiB per object).
INVALID_LIMIT = 1024


def writes_alike(old: QuotaResult, new: QuotaResult) -> bool:
    """Whether two results of a quota call for the same write on the same object: an object in
    line with ``old`` is in line with ``new``, with no need to diff it again."""
    return (old.namespace, old.name) == (new.namespace, new.name) and all(
        getattr(old, field) == getattr(new, field) for field in WRITTEN_FIELDS
    )


@dataclass(frozen=True, slots=True)
class QuotaWrite:
    """The changes one quota needs: annotations to set, and the new ``status.used`` if any."""

    namespace: str
    name: str
    #: Annotations to set; a key whose value is None is to be deleted (merge-patch null).
    annotations: dict[str, str | None]
    #: The new ``status.used``; a key whose value is None is to be deleted (merge-patch null).
    used: dict[str, str | None] | None

    @property
    def empty(self) -> bool:
        return not self.annotations and self.used is None


def _same(current: ResourceList | None, desired: Mapping[str, int]) -> bool:
    return current is not None and drop_zeros(current) == drop_zeros(desired)


def _round_trips(desired: Mapping[str, int]) -> bool:
    """Whether every value reads back exactly from its formatted quantity: within MaxInt64 (also
    enough for cpu, counted in millicores), where Kubernetes' parsing (ours too) caps nothing."""
    values = desired.values()
    return not values or (max(values) <= MAX_INT64 and min(values) >= -MAX_INT64)


def _written_already(current: object, written: object, desired: Mapping[str, int]) -> bool:
    """The object holds exactly what writing ``desired`` would write, and that reads back as
    ``desired``: then it is the same, without parsing a quantity (the common case of a diff)."""
    return current == written and _round_trips(desired)


#: Annotation texts and ``status.used`` lists we wrote (where they read back exactly) -> what they
#: read back as: a value we wrote is not parsed when it is compared with the next result. The
#: results' lists are never changed, so they are kept as they are. Bounded: forgotten when full.
_ENCODED: dict[str, ResourceList] = {}
_ENCODED_USED: dict[tuple[tuple[str, str], ...], ResourceList] = {}
_ENCODED_LIMIT = 65_536


def _remember(cache: dict[Any, ResourceList], written: Any, desired: ResourceList) -> None:
    """``written`` reads back as ``desired`` (checked by the caller): keep it for later diffs."""
    if len(cache) >= _ENCODED_LIMIT:
        cache.clear()
    cache[written] = desired


def _current_annotation(annotations: Mapping[str, str], key: str) -> ResourceList | None:
    text = annotations.get(key)
    if text is None:
        return None
    known = _ENCODED.get(text)
    if known is not None:
        return known
    try:
        return parse_resource_list_json(text)
    except QuantityError:
        return None  # unreadable: rewrite it


def _current_used(status: Mapping[str, Any] | None) -> ResourceList | None:
    used = (status or {}).get("used")
    if not isinstance(used, Mapping):
        return None
    try:
        known = _ENCODED_USED.get(tuple(sorted(used.items())))
    except TypeError:  # a value that is not a quantity string: parsed (and refused) below
        known = None
    if known is not None:
        return known
    try:
        return parse_resource_list(used)
    except QuantityError:
        return None


def quota_write(
    result: QuotaResult, annotations: Mapping[str, str], status: Mapping[str, Any] | None
) -> QuotaWrite:
    """The write that brings one quota object in line with its result (possibly empty)."""
    changes: dict[str, str | None] = {}
    if keys.ANNO_INVALID in annotations:
        changes[keys.ANNO_INVALID] = None  # valid again: it has a result
    for key, field in WRITTEN_ANNOTATIONS.items():
        if key == keys.ANNO_RUNTIME and result.name in (keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA):
            continue
        desired: ResourceList = getattr(result, field)
        encoded = to_annotation(desired)
        if not _written_already(annotations.get(key), encoded, desired) and not _same(
            _current_annotation(annotations, key), desired
        ):
            changes[key] = encoded
            if _round_trips(desired):
                _remember(_ENCODED, encoded, desired)
    return QuotaWrite(result.namespace, result.name, changes, _used_write(result.used, status))


def _used_write(
    desired: ResourceList, status: Mapping[str, Any] | None
) -> dict[str, str | None] | None:
    """The new ``status.used`` (stale keys as None), or None when it is the same already."""
    current = (status or {}).get("used")
    formatted = format_resource_list(desired)
    if _written_already(current, formatted, desired) or _same(_current_used(status), desired):
        return None
    if _round_trips(desired):
        _remember(_ENCODED_USED, tuple(formatted.items()), desired)
    stale = [key for key in current if key not in desired] if isinstance(current, Mapping) else []
    return {**dict.fromkeys(stale), **formatted}


def invalid_quotas(problems: Iterable[Problem]) -> dict[tuple[str, str], str]:
    """The quota objects left out of their tree, ``(namespace, name)`` -> why: every problem
    found on the object, in order, without the words saying it is left out."""
    by_object: dict[str, list[Problem]] = {}
    for problem in problems:
        by_object.setdefault(problem.object, []).append(problem)
    invalid = {}
    prefix = f"{keys.QUOTA_KIND} "
    for ref, found in by_object.items():
        if not ref.startswith(prefix) or not any(problem.left_out for problem in found):
            continue
        namespace, _, name = ref.removeprefix(prefix).partition("/")
        rules: list[str] = []
        for problem in found:
            rule = problem.message.removesuffix(LEFT_OUT).rstrip().removesuffix(";").rstrip()
            if rule and rule not in rules:
                rules.append(rule)
        invalid[(namespace, name)] = ("; ".join(rules) or LEFT_OUT)[:INVALID_LIMIT]
    return invalid


def invalid_write(
    namespace: str,
    name: str,
    reason: str,
    annotations: Mapping[str, str],
    status: Mapping[str, Any] | None,
) -> QuotaWrite:
    """The write that marks a quota left out of its tree (possibly empty): ``reason`` in
    ``elasticquota.dev/invalid``, no computed annotation, no ``status.used``."""
    changes: dict[str, str | None] = {}
    if annotations.get(keys.ANNO_INVALID) != reason:
        changes[keys.ANNO_INVALID] = reason
    for key in CLEARED_WHEN_INVALID:
        if key in annotations:
            changes[key] = None
    used = (status or {}).get("used")
    cleared: dict[str, str | None] | None = (
        dict.fromkeys(used) if isinstance(used, Mapping) and used else None
    )
    return QuotaWrite(namespace, name, changes, cleared)
