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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from elasticquota.core.quantity import CPU, QuantityError, format_units, parse_units
from elasticquota.core.resources import ResourceList

WILDCARD: Final = "*"
#: YuniKorn's name for cpu (in the same number of cores).
VCORE: Final = "vcore"
#: A pod counts 1 of this resource, so that a pasted YuniKorn limit on ``pods`` is honoured.
PODS: Final = "pods"

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
#: Annotation values are at most 256 KiB; a longer text is refused before YAML sees it.
_MAX_TEXT: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class LimitEntry:
    """One accepted limit object: the same numbers for each user and each group it names.

    ``max_resources`` is in engine units (millicores for cpu); a resource it does not list is not
    limited. ``max_applications`` 0 means no limit on the number of running applications.
    """

    index: int
    description: str = ""
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    max_resources: ResourceList = field(default_factory=dict)
    max_applications: int = 0

    @property
    def label(self) -> str:
        """How messages name the object: its position (1-based) and its ``limit`` text."""
        return (
            f'#{self.index + 1} "{self.description}"' if self.description else f"#{self.index + 1}"
        )

    def report_name(self, through_wildcard: bool) -> str:
        """The ``limit`` field of ``plan``: the text, else ``*`` for a wildcard match, else
        the position."""
        if self.description:
            return self.description
        return WILDCARD if through_wildcard else f"#{self.index + 1}"

    def describe_resources(self) -> str:
        return ", ".join(
            f"{name} {format_units(name, self.max_resources[name])}"
            for name in sorted(self.max_resources)
        )


@dataclass(frozen=True, slots=True)
class LimitProblem:
    """One broken rule in a quota's user limits: which quota, which limit object, which rule."""

    quota: str
    limit: str
    rule: str
    detail: str

    @property
    def message(self) -> str:
        where = f"user limit {self.limit}" if self.limit else "user limits"
        return f"quota {self.quota}: {where}: {self.detail} (rule {self.rule})"


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """The accepted limit objects of one quota, indexed the way the lookups need them."""

    quota: str
    entries: tuple[LimitEntry, ...] = ()
    #: Named user → its object; the wildcard is kept apart.
    users: Mapping[str, LimitEntry] = field(default_factory=dict)
    user_wildcard: LimitEntry | None = None
    #: Named groups in configuration order (object by object, list order): group selection order.
    group_order: tuple[str, ...] = ()
    groups: Mapping[str, LimitEntry] = field(default_factory=dict)
    group_wildcard: LimitEntry | None = None

    @classmethod
    def of(cls, quota: str, entries: Iterable[LimitEntry]) -> QuotaLimits:
        """Index accepted entries (later duplicates cannot exist: the checks refuse them)."""
        kept = tuple(entries)
        users: dict[str, LimitEntry] = {}
        groups: dict[str, LimitEntry] = {}
        order: list[str] = []
        user_wildcard = group_wildcard = None
        for entry in kept:
            for user in entry.users:
                if user == WILDCARD:
                    user_wildcard = entry
                else:
                    users.setdefault(user, entry)
            for group in entry.groups:
                if group == WILDCARD:
                    group_wildcard = entry
                elif group not in groups:
                    groups[group] = entry
                    order.append(group)
        return cls(quota, kept, users, user_wildcard, tuple(order), groups, group_wildcard)

    def user_limit(self, user: str) -> tuple[LimitEntry | None, bool]:
        """The object in force for ``user`` here and whether it came through the wildcard.

        A named entry replaces the wildcard entirely (no merge of fields)."""
        named = self.users.get(user)
        if named is not None:
            return named, False
        return self.user_wildcard, self.user_wildcard is not None

    def group_limit(self, group: str) -> LimitEntry | None:
        """The object in force for a tracked group here: ``*`` is the group wildcard's object; a
        named group never falls back on the wildcard."""
        if group == WILDCARD:
            return self.group_wildcard
        return self.groups.get(group)


# -- reading the annotation ---------------------------------------------------------------------


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
        raise ValueError(f"expected a list of limit objects, got {_type_name(raw)}")
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
    seen = _SeenNames()
    accepted: list[LimitEntry] = []
    problems: list[LimitProblem] = []
    for index, raw in enumerate(objects):
        entry, found = _check_object(quota, index, raw, seen, quota_max or {})
        problems.extend(found)
        if entry is not None and not found:
            accepted.append(entry)
            seen.commit(entry)
    return QuotaLimits.of(quota, accepted), problems


@dataclass(slots=True)
class _SeenNames:
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)

    def commit(self, entry: LimitEntry) -> None:
        self.users.update(entry.users)
        self.groups.update(entry.groups)


def _check_object(
    quota: str,
    index: int,
    raw: Any,
    seen: _SeenNames,
    quota_max: Mapping[str, int],
) -> tuple[LimitEntry | None, list[LimitProblem]]:
    position = f"#{index + 1}"
    if not isinstance(raw, Mapping):
        detail = f"a limit object must be a mapping, got {_type_name(raw)}"
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
        refuse("invalid-description", f"limit must be a text, got {_type_name(description)}")
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
                    f"{name} {format_units(name, max_resources[name])} > "
                    f"{format_units(name, quota_max[name])}"
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
        refuse("invalid-maxresources", f"maxresources must be a mapping, got {_type_name(value)}")
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


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a text"
    return type(value).__name__


def _first_line(text: str) -> str:
    return " ".join(text.split())[:300]
