"""The one reader of a raw ElasticQuota: a ``Quota`` and every value of it that does not read.

It reads whatever the object holds, broken or not (a webhook must judge an object that is not even
well-formed, and quote what was written), and gives each unreadable value a safe reading: a bad
quantity of min or max counts as 0, a bad annotation as absent (a negative shared weight or limit
too). What an unreadable value means is left to the caller: the engine's parse
(``api.parse.parse_quota``) leaves a quota with a bad quantity out of its tree and notes the rest;
the webhooks (``core.validation.facts.read_quota``) refuse the object, quoting the value.

The parent label and its alias are read by ``core.keys.parent_quota``, nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.quota import DEFAULT_API_VERSION, Quota
from elasticquota.core.quantities.durations import parse_duration
from elasticquota.core.quantities.quantity import QuantityError, parse_units
from elasticquota.core.quantities.resources import (
    ResourceList,
    negative_keys,
    parse_resource_list_json,
)

#: The longest minimum runtime a quota may ask for: a week, as ``revocation_min_runtime``.
MAX_MIN_RUNTIME = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Unreadable:
    """One value that does not read: where (``spec.min``, ``spec.max`` or ``annotation``), its
    key (a resource or an annotation), why, and what was read instead (annotations only)."""

    where: str
    key: str
    error: str
    consequence: str = ""


@dataclass(frozen=True, slots=True)
class QuotaReading:
    """A quota as read, and its unreadable values in the order they were met."""

    quota: Quota
    unreadable: tuple[Unreadable, ...]


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (a dict is told at once: the ABC check
    costs a microsecond, and watch bodies are dicts)."""
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping_or_empty(value).items() if v is not None}


def object_name(raw: Mapping[str, Any]) -> str:
    """``metadata.name``, else ``generateName`` (the API server has not named the object yet)."""
    metadata = mapping_or_empty(raw.get("metadata"))
    return str(metadata.get("name") or metadata.get("generateName") or "")


def quota_key(raw: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of a raw quota, as ``read_quota`` reads them (at once for the usual
    body: every echo of a write asks)."""
    metadata = raw.get("metadata")
    if type(metadata) is dict:
        namespace, name = metadata.get("namespace", ""), metadata.get("name")
        if type(namespace) is str and type(name) is str and name:
            return namespace, name
    return str(mapping_or_empty(metadata).get("namespace") or ""), object_name(raw)


def read_quota(raw: Mapping[str, Any]) -> QuotaReading:
    """The ``Quota`` a raw ElasticQuota holds, and what is unreadable in it."""
    metadata = mapping_or_empty(raw.get("metadata"))
    namespace, name = quota_key(raw)
    spec = dict(mapping_or_empty(raw.get("spec")))
    labels = string_map(metadata.get("labels"))
    annotations = string_map(metadata.get("annotations"))
    found: list[Unreadable] = []
    minimum = _resources("spec.min", spec.get("min"), found)
    maximum = _resources("spec.max", spec.get("max"), found)
    notes = _Annotations(annotations, found)
    quota = Quota(
        name=name,
        namespace=namespace,
        min=minimum,
        max=maximum,
        parent="" if name == keys.ROOT_QUOTA else keys.parent_quota(labels),
        is_parent=labels.get(keys.LABEL_IS_PARENT) == "true",
        allow_lent=labels.get(keys.LABEL_ALLOW_LENT) != "false",
        tree_id=labels.get(keys.LABEL_TREE_ID, ""),
        is_root=labels.get(keys.LABEL_IS_ROOT) == "true",
        ignore_default_tree=labels.get(keys.LABEL_IGNORE_DEFAULT_TREE) == "true",
        shared_weight=notes.non_negative(
            keys.ANNO_SHARED_WEIGHT,
            "spec.max is used as the shared weight",
            ("negative weight", "spec.max is used"),
        ),
        namespaces=notes.read(keys.ANNO_NAMESPACES, string_list, "ignored") or (),
        total_resource=notes.read(
            keys.ANNO_TOTAL_RESOURCE,
            parse_resource_list_json,
            "the tree's total is taken as empty",
        ),
        lending_limit=notes.limit(keys.ANNO_LENDING_LIMIT),
        borrowing_limit=notes.limit(keys.ANNO_BORROWING_LIMIT),
        revocation_min_runtime=notes.read(
            keys.ANNO_REVOCATION_MIN_RUNTIME,
            min_runtime_seconds,
            "the parent's or the operator's minimum runtime is used",
        ),
        preemption_min_runtime=notes.read(
            keys.ANNO_PREEMPTION_MIN_RUNTIME,
            min_runtime_seconds,
            "the parent's or the operator's minimum runtime is used",
        ),
        created=str(metadata.get("creationTimestamp") or ""),
        uid=str(metadata.get("uid") or ""),
        name_record=annotations.get(keys.ANNO_NAME_OWNER, ""),
        user_limits=annotations.get(keys.ANNO_USER_LIMITS),
        api_version=str(raw.get("apiVersion") or DEFAULT_API_VERSION),
        labels=labels,
        annotations=annotations,
        spec=spec,
        status=dict(mapping_or_empty(raw.get("status"))),
    )
    return QuotaReading(quota, tuple(found))


def _resources(where: str, raw: Any, found: list[Unreadable]) -> ResourceList:
    """A ResourceList key by key: a bad quantity is noted and counts as 0."""
    result: ResourceList = {}
    for name, value in mapping_or_empty(raw).items():
        try:
            result[str(name)] = parse_units(str(name), value)
        except QuantityError as error:
            found.append(Unreadable(where, str(name), str(error)))
            result[str(name)] = 0
    return result


def min_runtime_seconds(text: str) -> float:
    """A ``revocation-min-runtime`` or ``preemption-min-runtime`` annotation: seconds, at most a
    week (the settings' range)."""
    return parse_duration(text, MAX_MIN_RUNTIME)


def string_list(text: str) -> tuple[str, ...]:
    """A JSON list of strings (``ValueError`` saying what is wrong otherwise)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"malformed JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a JSON list of strings")
    return tuple(value)


@dataclass(slots=True)
class _Annotations:
    """The JSON annotations of one quota, each read once, every failure noted."""

    annotations: Mapping[str, str]
    found: list[Unreadable]

    def read(self, key: str, reader: Callable[[str], Any], consequence: str) -> Any:
        """One annotation read by ``reader``; None when absent, or unreadable (noted, with what
        is done instead)."""
        if key not in self.annotations:
            return None
        try:
            return reader(self.annotations[key])
        except (QuantityError, ValueError) as error:
            self.found.append(Unreadable("annotation", key, str(error), consequence))
            return None

    def non_negative(
        self, key: str, consequence: str, negative: tuple[str, str] | None = None
    ) -> ResourceList | None:
        """A ResourceList annotation with no negative value; a negative one is noted (with
        ``negative``'s error and consequence, else the names of the negative keys) and read as
        absent."""
        values: ResourceList | None = self.read(key, parse_resource_list_json, consequence)
        if values is None:
            return None
        below = negative_keys(values)
        if not below:
            return values
        error, instead = negative or (f"negative value in {below}", consequence)
        self.found.append(Unreadable("annotation", key, error, instead))
        return None

    def limit(self, key: str) -> ResourceList | None:
        return self.non_negative(key, "ignored")
