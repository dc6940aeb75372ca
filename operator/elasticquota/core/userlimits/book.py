"""The limits of a whole quota tree: checks between levels, the limit in force, the tracked group.

``build_book`` reads every quota's annotation (``config.parse_quota_limits``) and then applies
YuniKorn's checks between a quota and its ancestors (semantics §2, rules 11-13): walking from the
root down, per user name and per group name (wildcard included) the limit in force above is carried
through every level, and a lower limit object for the same name (else, for a named entry, the
ancestor's wildcard) must fit in it, for ``maxresources`` on the resources the ancestor lists and
for a non-zero ``maxapplications``. A lower object that does not fit is dropped with a problem;
siblings are independent.

``LimitBook`` answers the run-time questions (§3, §4): the object in force for a user or a group at
a quota, and the group an application of a user is tracked under on a path from leaf to root.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from elasticquota.core.quantities.quantity import format_quantity
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.config import parse_quota_limits
from elasticquota.core.userlimits.limits import WILDCARD, LimitEntry, LimitProblem, QuotaLimits

#: A quota path from the quota that holds the pod (the leaf) to the tree's root.
QuotaPath = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QuotaLimitSource:
    """What ``build_book`` needs of one quota: its name, its parent (None for a tree's root),
    the annotation text and ``spec.max`` in engine units."""

    name: str
    parent: str | None
    text: str | None
    max: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LimitBook:
    """Accepted limits by quota name. Immutable; a configuration change builds a new book."""

    quotas: Mapping[str, QuotaLimits] = field(default_factory=dict)

    def at(self, quota: str) -> QuotaLimits | None:
        limits = self.quotas.get(quota)
        return limits if limits is not None and limits.entries else None

    def user_limit(self, quota: str, user: str) -> tuple[LimitEntry | None, bool]:
        """The object in force for ``user`` at ``quota`` (named, else the user wildcard) and
        whether it came through the wildcard. Levels are independent: nothing is inherited."""
        limits = self.at(quota)
        if limits is None:
            return None, False
        return limits.user_limit(user)

    def group_limit(self, quota: str, group: str) -> LimitEntry | None:
        """The object in force for the tracked ``group`` at ``quota`` (``*``: the wildcard's)."""
        limits = self.at(quota)
        return None if limits is None else limits.group_limit(group)

    def tracked_group(self, path: Sequence[str], groups: Iterable[str]) -> str | None:
        """The group an application of a user in ``groups`` is tracked under (§4).

        From the leaf up: the first named group of a quota's limits, in configuration order, that
        the user belongs to; else ``*`` if that quota has a group wildcard; else the parent. A user
        without groups, or with no match on the whole path, has no tracked group."""
        member = set(groups)
        if not member:
            return None
        for quota in path:
            limits = self.at(quota)
            if limits is None:
                continue
            for group in limits.group_order:
                if group in member:
                    return group
            if limits.group_wildcard is not None:
                return WILDCARD
        return None


def build_book(sources: Iterable[QuotaLimitSource]) -> tuple[LimitBook, list[LimitProblem]]:
    """Parse every quota's limits and check them against their ancestors'."""
    parsed: dict[str, QuotaLimits] = {}
    parents: dict[str, str | None] = {}
    problems: list[LimitProblem] = []
    for source in sources:
        limits, found = parse_quota_limits(source.name, source.text, source.max)
        parsed[source.name] = limits
        parents[source.name] = source.parent
        problems.extend(found)
    checked, found = check_hierarchy(parsed, parents)
    problems.extend(found)
    return LimitBook(checked), problems


def change_problems(
    before: Iterable[QuotaLimitSource], after: Iterable[QuotaLimitSource]
) -> list[LimitProblem]:
    """The problems a change to the tree's quotas brings (in ``after``, not in ``before``).

    For the quota webhook: a quota update is refused when this is not empty. It covers the quota's
    own annotation (rules 1-10, its max), its limits against its ancestors', and its descendants'
    limits against a lowered limit of its own (reported on the descendant, as YuniKorn names the
    lower queue). Problems the tree already had are not the change's fault."""
    _, old = build_book(before)
    _, new = build_book(after)
    known = set(old)
    return [problem for problem in new if problem not in known]


# -- rules 11-13 --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Carried:
    """Per kind and name, the limit in force above a quota (component-wise minimum so far)."""

    resources: dict[tuple[str, str], ResourceList] = field(default_factory=dict)
    applications: dict[tuple[str, str], int] = field(default_factory=dict)

    def copy(self) -> _Carried:
        return _Carried(dict(self.resources), dict(self.applications))


def check_hierarchy(
    limits: Mapping[str, QuotaLimits], parent_of: Mapping[str, str | None]
) -> tuple[dict[str, QuotaLimits], list[LimitProblem]]:
    """Drop each limit object that does not fit in the limits in force above its quota."""
    carried: dict[str, _Carried] = {}
    checked: dict[str, QuotaLimits] = {}
    problems: list[LimitProblem] = []
    for quota in _top_down(limits, parent_of):
        parent = parent_of.get(quota)
        above = carried.get(parent, _Carried()) if parent is not None else _Carried()
        here = above.copy()
        kept: list[LimitEntry] = []
        for entry in limits[quota].entries:
            found = _entry_problems(quota, entry, above)
            found += _lone_wildcard_problems(quota, entry, kept)
            problems.extend(found)
            if not found:
                kept.append(entry)
                _carry(entry, above, here)
        carried[quota] = here
        checked[quota] = QuotaLimits.of(quota, kept)
    return checked, problems


def _lone_wildcard_problems(
    quota: str, entry: LimitEntry, kept: list[LimitEntry]
) -> list[LimitProblem]:
    """Rule 5 again over the objects kept so far: dropping an earlier object that named a group
    can leave a group wildcard alone, which is refused as if the dropped one were not written."""
    if WILDCARD not in entry.groups:
        return []
    named = {group for earlier in kept for group in earlier.groups} | set(entry.groups)
    if named != {WILDCARD}:
        return []
    return [
        LimitProblem(
            quota,
            entry.label,
            "lone-group-wildcard",
            'should not specify only one group limit that is using the wildcard "*": the '
            "named group limit before it was dropped (alone it would repeat the quota's own max)",
        )
    ]


def _top_down(limits: Mapping[str, QuotaLimits], parent_of: Mapping[str, str | None]) -> list[str]:
    """Quotas ordered so that every ancestor comes first (a parent cycle is cut where found)."""
    depth: dict[str, int] = {}
    for start in limits:
        chain: list[str] = []
        quota: str | None = start
        while quota is not None and quota not in depth and quota not in chain:
            chain.append(quota)
            quota = parent_of.get(quota)
        base = depth.get(quota, -1) if quota is not None else -1
        for offset, name in enumerate(reversed(chain)):
            depth[name] = base + 1 + offset
    return sorted(limits, key=lambda name: (depth[name], name))


def _subjects(entry: LimitEntry) -> list[tuple[str, str]]:
    return [("user", name) for name in entry.users] + [("group", name) for name in entry.groups]


def _entry_problems(quota: str, entry: LimitEntry, above: _Carried) -> list[LimitProblem]:
    problems: list[LimitProblem] = []
    for kind, name in _subjects(entry):
        key, through = _ancestor_key(above.resources, kind, name)
        if key is not None:
            ceiling = above.resources[key]
            over = sorted(
                resource
                for resource, value in ceiling.items()
                if entry.max_resources.get(resource, 0) > value
            )
            if over:
                problems.append(
                    LimitProblem(
                        quota,
                        entry.label,
                        "exceeds-ancestor-wildcard" if through else "exceeds-ancestor-limit",
                        f"{kind} {name} maxresources "
                        + ", ".join(
                            f"{resource} "
                            f"{format_quantity(resource, entry.max_resources[resource])}"
                            f" > {format_quantity(resource, ceiling[resource])}"
                            for resource in over
                        )
                        + (
                            " of the wildcard limit of a parent or ancestor quota"
                            if through
                            else f" of the {kind} limit of a parent or ancestor quota"
                        ),
                    )
                )
        key, through = _ancestor_key(above.applications, kind, name)
        if key is not None:
            ceiling_apps = above.applications[key]
            if ceiling_apps and not 0 < entry.max_applications <= ceiling_apps:
                problems.append(
                    LimitProblem(
                        quota,
                        entry.label,
                        "exceeds-ancestor-applications",
                        _applications_above(kind, name, entry.max_applications, ceiling_apps)
                        + ("wildcard" if through else kind)
                        + " limit of a parent or ancestor quota",
                    )
                )
    return problems


def _applications_above(kind: str, name: str, applications: int, ceiling: int) -> str:
    """The head of an exceeds-ancestor-applications message: an entry without maxapplications
    (unlimited) is told to set one, rather than shown as "unlimited > 2"."""
    if applications == 0:
        return (
            f"{kind} {name} sets no maxapplications (unlimited); set one, at most {ceiling}, "
            "as the "
        )
    return f"{kind} {name} maxapplications {applications} > {ceiling} of the "


def _ancestor_key(
    carried: Mapping[tuple[str, str], object], kind: str, name: str
) -> tuple[tuple[str, str] | None, bool]:
    """The carried entry a name is checked against: the same name, else (for a named entry) the
    wildcard of its kind. The flag says it is the wildcard."""
    if (kind, name) in carried:
        return (kind, name), False
    if name != WILDCARD and (kind, WILDCARD) in carried:
        return (kind, WILDCARD), True
    return None, False


def _carry(entry: LimitEntry, above: _Carried, here: _Carried) -> None:
    for kind, name in _subjects(entry):
        key, through = _ancestor_key(above.resources, kind, name)
        if key is None or through:
            here.resources[(kind, name)] = dict(entry.max_resources)
        else:
            here.resources[(kind, name)] = _min_permissive(
                entry.max_resources, above.resources[key]
            )
        key, through = _ancestor_key(above.applications, kind, name)
        if key is None or through:
            here.applications[(kind, name)] = entry.max_applications
        else:
            here.applications[(kind, name)] = _min_apps(
                entry.max_applications, above.applications[key]
            )


def _min_permissive(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Component-wise minimum; a resource listed on one side only keeps that side's value."""
    result = dict(left)
    for name, value in right.items():
        result[name] = min(result[name], value) if name in result else value
    return result


def _min_apps(left: int, right: int) -> int:
    """Minimum where 0 means unlimited (YuniKorn's ``Min`` would carry 0, losing the limit)."""
    if not left or not right:
        return left or right
    return min(left, right)
