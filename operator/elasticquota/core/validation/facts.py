"""Reading ElasticQuotas for admission: the facts the rules look at, and ``Violation``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from elasticquota.core import keys
from elasticquota.core.quantities.quantity import QuantityError, parse_units
from elasticquota.core.quantities.resources import ResourceList

LABEL_ALLOW_FORCE_UPDATE: Final = f"{keys.PREFIX}/allow-force-update"
ANNO_MAX_STRICT_CHECK_KEYS: Final = f"{keys.PREFIX}/max-strict-check-resource-keys"
#: What an UPDATE must change for the rules to run at all (plus our own limits).
WATCHED_LABELS: Final = (*keys.LABEL_PARENT_ALIASES, keys.LABEL_IS_PARENT, keys.LABEL_TREE_ID)
WATCHED_ANNOTATIONS: Final = (
    keys.ANNO_NAMESPACES,
    keys.ANNO_LENDING_LIMIT,
    keys.ANNO_BORROWING_LIMIT,
    keys.ANNO_USER_LIMITS,
)
KEY_CHECK_PREFIX: Final = (
    "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey failed: "
)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: a short rule id (for tests and logs) and the message for the user."""

    rule: str
    message: str


# -- reading objects ----------------------------------------------------------------------------


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, slots=True)
class QuotaFacts:
    """What the rules read of one ElasticQuota, quantities in engine units."""

    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    min: ResourceList
    max: ResourceList
    used: ResourceList
    namespaces: tuple[str, ...] = ()
    #: The quantities as written, for messages (``"-1"`` rather than ``-1000`` millicores).
    written: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def parent(self) -> str:
        """The parent's name: the label (or its alias), the virtual root when empty."""
        return "" if self.name == keys.ROOT_QUOTA else keys.parent_quota(self.labels)

    @property
    def is_parent(self) -> bool:
        return self.labels.get(keys.LABEL_IS_PARENT) == "true"

    @property
    def tree_id(self) -> str:
        return self.labels.get(keys.LABEL_TREE_ID, "")

    @property
    def is_root(self) -> bool:
        return self.labels.get(keys.LABEL_IS_ROOT) == "true"

    @property
    def force_update(self) -> bool:
        return self.labels.get(LABEL_ALLOW_FORCE_UPDATE) == "true"


def string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping_or_empty(value).items() if v is not None}


def _resources(
    quota: str, where: str, raw: Any, found: list[Violation]
) -> tuple[ResourceList, dict[str, Any]]:
    """Parse a ResourceList key by key: a bad quantity is a violation and counts as 0."""
    result: ResourceList = {}
    written = dict(mapping_or_empty(raw))
    for name, value in written.items():
        try:
            result[name] = parse_units(name, value)
        except QuantityError as error:
            found.append(Violation("quantity", f"{quota} {where}.{name}: {error}"))
            result[name] = 0
    return result, written


def quota_namespaces(
    quota: str, annotations: Mapping[str, str], found: list[Violation]
) -> tuple[str, ...]:
    text = annotations.get(keys.ANNO_NAMESPACES, "")
    if not text:
        return ()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        value = error
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    found.append(
        Violation(
            "namespaces-annotation",
            f"{quota} annotation {keys.ANNO_NAMESPACES}: expected a JSON list of namespace names, "
            f"got {text!r}",
        )
    )
    return ()


def object_name(raw: Mapping[str, Any]) -> str:
    """``metadata.name``, else ``generateName`` (the API server has not named the object yet)."""
    metadata = mapping_or_empty(raw.get("metadata"))
    return str(metadata.get("name") or metadata.get("generateName") or "")


def read_quota(raw: Mapping[str, Any]) -> tuple[QuotaFacts, list[Violation]]:
    """The facts of a raw ElasticQuota, and what is unreadable in it."""
    metadata = mapping_or_empty(raw.get("metadata"))
    name = object_name(raw)
    spec = mapping_or_empty(raw.get("spec"))
    found: list[Violation] = []
    minimum, written_min = _resources(name, "spec.min", spec.get("min"), found)
    maximum, written_max = _resources(name, "spec.max", spec.get("max"), found)
    used, written_used = _resources(
        name, "status.used", mapping_or_empty(raw.get("status")).get("used"), []
    )
    annotations = string_map(metadata.get("annotations"))
    facts = QuotaFacts(
        name=name,
        namespace=str(metadata.get("namespace") or ""),
        labels=string_map(metadata.get("labels")),
        annotations=annotations,
        spec=spec,
        min=minimum,
        max=maximum,
        used=used,
        namespaces=quota_namespaces(name, annotations, found),
        written={"min": written_min, "max": written_max, "used": written_used},
    )
    return facts, found


def parent_of_body(raw: Mapping[str, Any]) -> str:
    """The parent a raw quota's labels name (``keys.parent_quota``)."""
    return keys.parent_quota(mapping_or_empty(mapping_or_empty(raw.get("metadata")).get("labels")))


QuotaKey = tuple[str, str]
