"""The usage of users or groups under their limits, for ``elastic-quota usage users|groups``.

YuniKorn shows a user's (group's) tracking over REST as a tree of queues: per queue the usage,
the running applications, ``maxResources`` and ``maxApplications``. Here the same figures come
from a solved ``Snapshot`` (``user_limits``): the JSON document is ``plan -o json``'s ``users`` or
``groups`` section (the stable contract: subject -> quota -> used, applications, maxResources,
maxApplications, limit), and the table lists each subject's quotas as a tree, the top quota
first, with the limit in force, running applications of the maximum and usage of the maximum.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final, Literal

from elasticquota.core.solve.results import Snapshot
from elasticquota.core.userlimits import Kind, SubjectUsage
from elasticquota.plan.table import usage_row, users_header

Section = Literal["users", "groups"]
KINDS: Final[dict[Section, Kind]] = {"users": "user", "groups": "group"}
INDENT: Final = "  "


class UnknownSubjectError(LookupError):
    """The user or group asked for has neither usage nor a limit at any quota."""


def _lines(snapshot: Snapshot, section: Section, name: str | None) -> list[SubjectUsage]:
    kind = KINDS[section]
    lines = [
        line
        for line in snapshot.user_limits.usage()
        if line.kind == kind and (name is None or line.name == name)
    ]
    if name is not None and not lines:
        raise UnknownSubjectError(
            f"{kind} {name} has no usage and no limit at any quota (names are case-sensitive)"
        )
    return lines


def usage_section(
    snapshot: Snapshot, section: Section, name: str | None = None
) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``{"users": {user: {quota: {...}}}}`` (or ``groups``), optionally for one subject only;
    ``UnknownSubjectError`` when ``name`` is given and the subject appears nowhere."""
    subjects: dict[str, dict[str, dict[str, Any]]] = {}
    for line in _lines(snapshot, section, name):
        subjects.setdefault(line.name, {})[line.quota] = line.to_json()
    return {section: subjects}


def _tree_order(snapshot: Snapshot, lines: list[SubjectUsage]) -> list[SubjectUsage]:
    """One subject's lines from the top quota down, each indented by its depth among them."""
    mine = {line.quota for line in lines}

    def chain(quota: str) -> list[str]:
        return [quota, *snapshot.ancestors(quota)] if quota in snapshot.quotas else [quota]

    ordered = sorted(lines, key=lambda line: tuple(reversed(chain(line.quota))))
    return [
        replace(
            line, quota=INDENT * sum(1 for up in chain(line.quota)[1:] if up in mine) + line.quota
        )
        for line in ordered
    ]


def render_usage(
    snapshot: Snapshot,
    section: Section,
    name: str | None = None,
    resources: set[str] | None = None,
) -> str:
    """The table: a header, then per subject its quotas as a tree (``usage_row`` columns)."""
    by_subject: dict[str, list[SubjectUsage]] = {}
    for line in _lines(snapshot, section, name):
        by_subject.setdefault(line.name, []).append(line)
    if not by_subject:
        return f"no {section} with usage or a limit\n"
    rows = [users_header()]
    for subject in sorted(by_subject):
        for line in _tree_order(snapshot, by_subject[subject]):
            rows += usage_row(line, resources)
    return "\n".join(rows) + "\n"
