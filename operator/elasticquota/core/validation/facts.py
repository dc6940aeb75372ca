"""Reading ElasticQuotas for admission: the ``Quota`` the rules look at, what is unreadable in it
as a ``Violation``, and the keys the rules watch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from elasticquota.core import keys
from elasticquota.core.model import quotaread
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import mapping_or_empty, object_name, string_map
from elasticquota.core.quantities.quantity import CPU, QuantityError, parse_quantity
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
    keys.ANNO_REVOCATION_MIN_RUNTIME,
    keys.ANNO_PREEMPTION_MIN_RUNTIME,
)
#: Exact amounts are counted in billionths of the Kubernetes value (every quantity is a whole
#: number of them: Kubernetes rounds quantities up to the nano).
NANOS: Final = 10**9
KEY_CHECK_PREFIX: Final = (
    "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey failed: "
)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: a short rule id (for tests and logs) and the message for the user."""

    rule: str
    message: str


# -- reading objects ----------------------------------------------------------------------------


def force_update(quota: Quota) -> bool:
    """The quota asks that the rules of its tree id be skipped (the reference's force update)."""
    return quota.labels.get(LABEL_ALLOW_FORCE_UPDATE) == "true"


def exact_amounts(quota: Quota, where: str) -> ResourceList:
    """``min``, ``max`` or ``used`` as written, exactly, in ``NANOS`` of each value: the
    reference's webhook compares the quantities themselves, where engine units are rounded up
    (memory ``"1.5"`` and ``"1.2"`` are both 2 bytes, cpu ``"0.5m"`` is 1m). A value that does
    not read counts as its engine units (0: it is refused for itself)."""
    written = quota.written(where)
    found: ResourceList = {}
    for name, units in getattr(quota, where).items():
        try:
            value = parse_quantity(written[name])
        except (KeyError, QuantityError):
            value = Fraction(units, 1000 if name == CPU else 1)
        found[name] = int(value * NANOS)
    return found


def unreadable(quota: Quota, where: str, name: str) -> bool:
    """Whether ``min`` or ``max`` of this resource is not a quantity: refused for itself (rule
    ``quantity``), it counts as 0 in ``exact_amounts``, and a rule that compared that 0 would
    blame the same value a second time ("min 1Gi > max 1.5.5Gi", "its min: cpu 0")."""
    written = quota.written(where)
    if name not in written:
        return False
    try:
        parse_quantity(written[name])
    except QuantityError:
        return True
    return False


def read_quota(raw: Mapping[str, Any]) -> tuple[Quota, list[Violation]]:
    """A raw ElasticQuota read by the one reader (``core.model.quotaread``), and the webhooks'
    reading of what does not read: a bad quantity of min or max (counted as 0) and a
    ``namespaces`` annotation that is not a JSON list of names are refused, quoting the value as
    written. The other annotations are judged by the rules that read them (``self_item``)."""
    reading = quotaread.read_quota(raw)
    quota = reading.quota
    found: list[Violation] = []
    for item in reading.unreadable:
        if item.where != "annotation":
            found.append(
                Violation("quantity", f"{quota.name} {item.where}.{item.key}: {item.error}")
            )
        elif item.key == keys.ANNO_NAMESPACES and quota.annotations[item.key]:
            found.append(_namespaces_violation(quota))
    return quota, found


def _namespaces_violation(quota: Quota) -> Violation:
    text = quota.annotations[keys.ANNO_NAMESPACES]
    return Violation(
        "namespaces-annotation",
        f"{quota.name} annotation {keys.ANNO_NAMESPACES}: expected a JSON list of namespace "
        f"names, got {text!r}",
    )


QuotaKey = tuple[str, str]

__all__ = [
    "ANNO_MAX_STRICT_CHECK_KEYS",
    "KEY_CHECK_PREFIX",
    "LABEL_ALLOW_FORCE_UPDATE",
    "NANOS",
    "WATCHED_ANNOTATIONS",
    "WATCHED_LABELS",
    "QuotaKey",
    "Violation",
    "exact_amounts",
    "force_update",
    "mapping_or_empty",
    "object_name",
    "read_quota",
    "string_map",
    "unreadable",
]
