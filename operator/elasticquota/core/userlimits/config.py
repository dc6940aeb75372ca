"""The ``elasticquota.dev/user-limits`` annotation of one quota: parsing and YuniKorn's own checks.

The annotation holds a YAML (or JSON) list of YuniKorn limit objects, written with YuniKorn's keys
(``limit``, ``users``, ``groups``, ``maxresources``, ``maxapplications``) so that a queue's
``limits:`` can be pasted as they are (a mapping ``{limits: [...]}`` is accepted too). Quantities
are Kubernetes quantities under Kubernetes resource names; YuniKorn's ``vcore`` is read as ``cpu``.

``parse_quota_limits`` applies every per-quota rule of YuniKorn's validator (semantics §2, rules
1-10, in YuniKorn's order) and returns the limits that survive plus one ``LimitProblem`` per broken
rule. Unlike YuniKorn, which refuses the whole configuration at its first error, a broken limit
object is dropped on its own (as if it were not written) and the quota's other objects are kept;
the quota webhook refuses any annotation with a problem, so the difference only shows in ``plan``
and in the live operator reading an object written before the webhook ran.

Here: reading the text (``load_limit_objects``) and checking the objects in order
(``check_limit_objects``); the values it builds are in ``core.userlimits.limits``, the rules for
one object in ``core.userlimits.rules``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml

from elasticquota.core.userlimits.limits import LimitEntry, LimitProblem, QuotaLimits
from elasticquota.core.userlimits.rules import SeenNames, check_object, type_name

__all__ = ["check_limit_objects", "load_limit_objects", "parse_quota_limits"]

#: Annotation values are at most 256 KiB; a longer text is refused before YAML sees it.
_MAX_TEXT: Final = 256 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases: a few bytes of aliases can expand to gigabytes."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError('YAML aliases are not allowed (quote a wildcard: users: ["*"])')
        return super().compose_node(parent, index)


def load_limit_objects(text: str) -> list[Any]:
    """The raw list of limit objects in the annotation text.

    Raises ``ValueError`` with a readable reason when the text is not YAML/JSON or not a list.
    """
    if len(text) > _MAX_TEXT:
        raise ValueError(f"the annotation is longer than {_MAX_TEXT} characters")
    try:
        raw = json.loads(text)
    except RecursionError:
        raise ValueError("not valid YAML or JSON: nested too deeply") from None
    except ValueError:
        try:
            raw = yaml.load(text, Loader=_NoAliasLoader)
        except RecursionError:
            raise ValueError("not valid YAML or JSON: nested too deeply") from None
        except yaml.YAMLError as error:
            reason = _first_line(str(error))
            if "alias" in reason:
                reason += ' (a wildcard must be quoted: users: ["*"])'
            raise ValueError(f"not valid YAML or JSON: {reason}") from None
    if raw is None:
        return []
    if isinstance(raw, Mapping) and set(raw) == {"limits"}:
        raw = raw["limits"] if raw["limits"] is not None else []
    if not isinstance(raw, list):
        raise ValueError(f"expected a list of limit objects, got {type_name(raw)}")
    return raw


def parse_quota_limits(
    quota: str,
    text: str | None,
    quota_max: Mapping[str, int] | None = None,
) -> tuple[QuotaLimits, list[LimitProblem]]:
    """Parse and check one quota's annotation; ``quota_max`` is its ``spec.max`` in engine units
    (rule 10 compares each limit with the resources it lists). Absent or blank text: no limits."""
    if text is None or not text.strip():
        return QuotaLimits.of(quota, ()), []
    try:
        objects = load_limit_objects(text)
    except ValueError as error:
        return QuotaLimits.of(quota, ()), [LimitProblem(quota, "", "syntax", str(error))]
    return check_limit_objects(quota, objects, quota_max)


def check_limit_objects(
    quota: str,
    objects: Sequence[Any],
    quota_max: Mapping[str, int] | None = None,
) -> tuple[QuotaLimits, list[LimitProblem]]:
    """Rules 1-10 over already-loaded objects, in order; names seen are remembered across the
    quota's accepted objects (a dropped object counts as not written)."""
    seen = SeenNames()
    accepted: list[LimitEntry] = []
    problems: list[LimitProblem] = []
    for index, raw in enumerate(objects):
        entry, found = check_object(quota, index, raw, seen, quota_max or {})
        problems.extend(found)
        if entry is not None and not found:
            accepted.append(entry)
            seen.commit(entry)
    return QuotaLimits.of(quota, accepted), problems


def _first_line(text: str) -> str:
    return " ".join(text.split())[:300]
