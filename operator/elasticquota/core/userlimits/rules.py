"""YuniKorn's per-quota rules for one limit object (semantics §2, rules 1-10, in its order).

``check_object`` reads one raw limit object of a quota's annotation and returns the
``LimitEntry`` it makes, or the problems that drop it (unknown keys with a spelling hint, name
patterns, duplicates, names after a wildcard, a lone group wildcard, ``maxresources`` and
``maxapplications`` values, an object that limits nothing, a maximum above the quota's own).
``SeenNames`` carries the names of the quota's earlier accepted objects across the calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from elasticquota.core.quantities.quantity import CPU, QuantityError, format_quantity, parse_units
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.limits import VCORE, WILDCARD, LimitEntry, LimitProblem

KNOWN_KEYS: Final = ("limit", "users", "groups", "maxresources", "maxapplications")
#: Spellings people write by habit (YuniKorn's REST output, Kubernetes' camelCase).
_SPELLING_HINTS: Final = {
    "maxResources": "maxresources",
    "maxApplications": "maxapplications",
    "max_resources": "maxresources",
    "max_applications": "maxapplications",
    "user": "users",
    "group": "groups",
    "name": "limit",
    "description": "limit",
}

# YuniKorn's name patterns (configvalidator.go): service-account names pass the user pattern.
_USER_NAME: Final = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*\$?")
_GROUP_NAME: Final = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")


@dataclass(slots=True)
class SeenNames:
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)

    def commit(self, entry: LimitEntry) -> None:
        self.users.update(entry.users)
        self.groups.update(entry.groups)


def check_object(
    quota: str,
    index: int,
    raw: Any,
    seen: SeenNames,
    quota_max: Mapping[str, int],
) -> tuple[LimitEntry | None, list[LimitProblem]]:
    position = f"#{index + 1}"
    if not isinstance(raw, Mapping):
        detail = f"a limit object must be a mapping, got {type_name(raw)}"
        return None, [LimitProblem(quota, position, "not-an-object", detail)]
    description = raw.get("limit")
    label = position
    if isinstance(description, str | int | float) and not isinstance(description, bool):
        description = str(description)
        label = f'{position} "{description}"' if description else position
    problems: list[LimitProblem] = []

    def refuse(rule: str, detail: str) -> None:
        problems.append(LimitProblem(quota, label, rule, detail))

    for key in raw:
        if key not in KNOWN_KEYS:
            hint = _SPELLING_HINTS.get(str(key))
            refuse(
                "unknown-key",
                f"unknown key {key!r}"
                + (
                    f" (did you mean {hint!r}?)"
                    if hint
                    else f"; known keys: {', '.join(KNOWN_KEYS)}"
                ),
            )
    if description is not None and not isinstance(description, str):
        refuse("invalid-description", f"limit must be a text, got {type_name(description)}")
        description = ""
    users = _names(raw.get("users"), "users", refuse)
    groups = _names(raw.get("groups"), "groups", refuse)
    if users is None or groups is None:
        return None, problems
    # Rule 1.
    if not users and not groups:
        refuse("empty-users-and-groups", "empty user and group lists: name a user or a group")
    # Rules 2-4, names in order, across this quota's earlier objects.
    _check_names("user", users, _USER_NAME, set(seen.users), refuse)
    _check_names("group", groups, _GROUP_NAME, set(seen.groups), refuse)
    # Rule 5: a group wildcard needs a named group limit before it (or beside it).
    groups_so_far = seen.groups | set(groups)
    if WILDCARD in groups_so_far and len(groups_so_far) == 1:
        refuse(
            "lone-group-wildcard",
            'should not specify only one group limit that is using the wildcard "*": name a '
            "group in this or an earlier limit (alone it would repeat the quota's own max)",
        )
    # Rules 6-8.
    max_resources = _max_resources(raw.get("maxresources"), refuse)
    max_applications = _max_applications(raw.get("maxapplications"), refuse)
    if max_resources is not None and max_applications is not None:
        if max_applications == 0 and not max_resources:
            refuse(
                "no-limit-values",
                "all resource limits are null: set maxresources or a maxapplications above 0",
            )
        # Rule 10: within the quota's own max, on the resources that max lists.
        above = sorted(
            name
            for name, value in max_resources.items()
            if name in quota_max and value > quota_max[name]
        )
        if above:
            refuse(
                "exceeds-quota-max",
                "maxresources exceed the quota's max: "
                + ", ".join(
                    f"{name} {format_quantity(name, max_resources[name])} > "
                    f"{format_quantity(name, quota_max[name])}"
                    for name in above
                ),
            )
    if problems or max_resources is None or max_applications is None:
        return None, problems
    entry = LimitEntry(
        index=index,
        description=description or "",
        users=tuple(users),
        groups=tuple(groups),
        max_resources=max_resources,
        max_applications=max_applications,
    )
    return entry, problems


def _names(value: Any, key: str, refuse: Any) -> list[str] | None:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        refuse(f"invalid-{key}", f"{key} must be a list of names, got {value!r}"[:200])
        return None
    return list(value)


def _check_names(
    kind: str, names: Sequence[str], pattern: re.Pattern[str], seen: set[str], refuse: Any
) -> None:
    for name in names:
        if name != WILDCARD and not pattern.fullmatch(name):
            refuse(f"invalid-{kind}-name", f"invalid limit {kind} name {name!r}")
        if name in seen:
            refuse(f"duplicate-{kind}", f"duplicated {kind} name {name!r}")
        seen.add(name)
        if WILDCARD in seen and name != WILDCARD:
            refuse(
                f"{kind}-after-wildcard",
                f"should not set no wildcard {kind} {name!r} after wildcard {kind} limit",
            )


def _max_resources(value: Any, refuse: Any) -> ResourceList | None:
    """Rule 6: parse; at least one value above 0, none below. Absent or ``{}``: none given."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        refuse("invalid-maxresources", f"maxresources must be a mapping, got {type_name(value)}")
        return None
    result: ResourceList = {}
    broken = False
    for raw_name, raw_value in value.items():
        name = CPU if str(raw_name) == VCORE else str(raw_name)
        if name in result:
            refuse("invalid-maxresources", f"maxresources lists {name} twice (vcore is cpu)")
            broken = True
            continue
        try:
            result[name] = parse_units(name, raw_value)
        except QuantityError as error:
            refuse("invalid-maxresources", f"maxresources {raw_name}: {error}")
            broken = True
    if broken:
        return None
    negative = sorted(name for name, amount in result.items() if amount < 0)
    if negative:
        refuse(
            "negative-maxresources",
            f"MaxResources should be greater than zero: {', '.join(negative)} is negative",
        )
        return None
    if result and not any(result.values()):
        refuse(
            "zero-maxresources",
            "MaxResources should be greater than zero: every listed resource is 0",
        )
        return None
    return result


def _max_applications(value: Any, refuse: Any) -> int | None:
    """Rule 7: an unsigned integer; 0 or absent is no limit."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(
            "invalid-maxapplications",
            f"maxapplications must be a whole number, got {value!r}"[:200],
        )
        return None
    if value < 0:
        refuse("invalid-maxapplications", f"maxapplications must not be negative, got {value}")
        return None
    return value


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a text"
    return type(value).__name__
