"""Self-item checks, the lending / borrowing limit annotations and the minimum runtime one."""

from __future__ import annotations

import json
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import min_runtime_seconds
from elasticquota.core.quantities.quantity import QuantityError, format_quantity, parse_units
from elasticquota.core.quantities.resources import (
    ResourceList,
    negative_keys,
    parse_resource_list_json,
)
from elasticquota.core.validation.facts import (
    ANNO_MAX_STRICT_CHECK_KEYS,
    Violation,
    exact_amounts,
    unreadable,
)
from elasticquota.core.validation.messages import amounts_text, go_list, written_text


def _negatives(quota: Quota, where: str, label: str) -> list[Violation]:
    values: ResourceList = getattr(quota, where)
    negative = negative_keys(values)
    if not negative:
        return []
    written = ", ".join(f"{name}={written_text(quota, where, name)}" for name in negative)
    return [
        Violation(
            f"negative-{where}",
            f"{quota.name} quota.Spec.{label}'s value < 0, in dimensions :{go_list(negative)} "
            f"({written})",
        )
    ]


def _annotation_list(
    quota: Quota,
    key: str,
    rule: str,
    reference_wording: bool = False,
    text: str | None = None,
) -> tuple[ResourceList | None, list[Violation]]:
    """A ResourceList annotation (or ``text`` read from it): parsed, or a violation; None when
    absent or empty."""
    text = quota.annotations.get(key, "") if text is None else text
    if not text:
        return None, []
    try:
        values = parse_resource_list_json(text)
    except QuantityError as error:
        where = f"quota.Annotation[{key}]'s value" if reference_wording else f"annotation {key}"
        return None, [Violation(rule, f"{quota.name} {where} is invalid: {error}")]
    return values, []


def _refused_max(quota: Quota, name: str) -> bool:
    """Whether ``spec.max`` of this resource is refused itself (negative, or not a quantity)."""
    written = quota.written("max").get(name)
    if written is None:
        return False
    return unreadable(quota, "max", name) or parse_units(name, written) < 0


def _copies_a_refused_max(quota: Quota, name: str, value: Any) -> bool:
    """A shared weight that is the max as written (the mutating webhook copies max into a
    missing shared weight) where that max is refused: the max's rule names the problem, so the
    copy is not blamed too."""
    if not _refused_max(quota, name):
        return False
    written = quota.written("max")[name]
    try:
        return parse_units(name, value) == parse_units(name, written)
    except QuantityError:
        return str(value) == str(written)


def _shared_weight(quota: Quota) -> list[Violation]:
    key = keys.ANNO_SHARED_WEIGHT
    text = quota.annotations.get(key, "")
    try:
        written = json.loads(text) if text else None
    except json.JSONDecodeError:
        written = None
    if isinstance(written, dict):
        kept = {k: v for k, v in written.items() if not _copies_a_refused_max(quota, str(k), v)}
        text = json.dumps(kept) if kept != written else text
    weight, found = _annotation_list(quota, key, "shared-weight", reference_wording=True, text=text)
    if weight is None:
        return found
    negative = negative_keys(weight)
    if negative:
        found.append(
            Violation(
                "shared-weight",
                f"{quota.name} quota.Annotation[{key}]'s value < 0, in dimension "
                f":{go_list(negative)} ({amounts_text(weight, negative)})",
            )
        )
    return found


def _min_within_max(quota: Quota) -> list[Violation]:
    found = []
    minimum, maximum = exact_amounts(quota, "min"), exact_amounts(quota, "max")
    for name in sorted(minimum):
        if name not in maximum:
            found.append(
                Violation(
                    "min-key-in-max",
                    f"resourceKey {name} of quota {quota.name} is included in min, which is not "
                    "included in max",
                )
            )
        elif minimum[name] > maximum[name] and not (
            unreadable(quota, "min", name) or unreadable(quota, "max", name)
        ):
            found.append(
                Violation(
                    "min-le-max",
                    f"resourceKey {name} of quota {quota.name} min "
                    f"{written_text(quota, 'min', name)} > max {written_text(quota, 'max', name)}",
                )
            )
    return found


def _max_strict_keys(quota: Quota) -> list[Violation]:
    """``max-strict-check-resource-keys``: for those keys, max must stay at or above used."""
    text = quota.annotations.get(ANNO_MAX_STRICT_CHECK_KEYS, "")
    if not text:
        return []
    try:
        names = json.loads(text)
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or not all(isinstance(item, str) for item in names):
        return [
            Violation(
                "max-strict-keys",
                f"{quota.name} quota.Annotation[{ANNO_MAX_STRICT_CHECK_KEYS}]'s value is invalid: "
                f"expected a JSON list of resource names, got {text!r}",
            )
        ]
    found = []
    used, maximum = exact_amounts(quota, "used"), exact_amounts(quota, "max")
    for name in names:
        if name not in used:
            continue  # never used: nothing to compare
        if name not in maximum:
            message = (
                f"resourceKey {name} of quota {quota.name} is included in used, which is not "
                "included in max but should check max >= used"
            )
            found.append(Violation("max-strict-keys", message))
        elif maximum[name] < used[name] and not unreadable(quota, "max", name):
            found.append(
                Violation(
                    "max-strict-keys",
                    f"resourceKey {name} of quota {quota.name} max "
                    f"{written_text(quota, 'max', name)} "
                    f"< used {written_text(quota, 'used', name)}",
                )
            )
    return found


def _limits(quota: Quota) -> list[Violation]:
    """The extension annotations: valid, non-negative ResourceLists; lending at most min."""
    found: list[Violation] = []
    for key, rule in ((keys.ANNO_LENDING_LIMIT, "lending-limit"),
                      (keys.ANNO_BORROWING_LIMIT, "borrowing-limit")):  # fmt: skip
        values, problems = _annotation_list(quota, key, rule)
        found += problems
        if values is None:
            continue
        negative = negative_keys(values)
        if negative:
            found.append(
                Violation(
                    rule,
                    f"{quota.name} annotation {key} has negative values: "
                    f"{amounts_text(values, negative)}",
                )
            )
        if rule == "lending-limit":
            above = sorted(
                name
                for name, value in values.items()
                if value > max(quota.min.get(name, 0), 0) and not unreadable(quota, "min", name)
            )
            for name in above:
                found.append(
                    Violation(
                        rule,
                        f"{quota.name} lending limit {name} "
                        f"{format_quantity(name, values[name])} > min "
                        f"{format_quantity(name, quota.min.get(name, 0))}: a quota can lend at "
                        "most its min",
                    )
                )
    return found


#: The minimum-runtime annotations, each checked by the rule named after it.
MIN_RUNTIME_ANNOTATIONS = (keys.ANNO_REVOCATION_MIN_RUNTIME, keys.ANNO_PREEMPTION_MIN_RUNTIME)


def _min_runtimes(quota: Quota) -> list[Violation]:
    """The ``revocation-min-runtime`` and ``preemption-min-runtime`` annotations: seconds or a
    duration, at most a week."""
    found: list[Violation] = []
    for annotation in MIN_RUNTIME_ANNOTATIONS:
        text = quota.annotations.get(annotation)
        if text is None:
            continue
        try:
            min_runtime_seconds(text)
        except ValueError as error:
            message = f"{quota.name} annotation {annotation} is invalid: {error}"
            found.append(Violation(annotation.rpartition("/")[2], message))
    return found


def self_item_violations(quota: Quota) -> list[Violation]:
    """Every rule about the quota alone, plus the extension annotations."""
    return [
        *_negatives(quota, "max", "Max"),
        *_negatives(quota, "min", "Min"),
        *_shared_weight(quota),
        *_min_within_max(quota),
        *_max_strict_keys(quota),
        *_limits(quota),
        *_min_runtimes(quota),
    ]
