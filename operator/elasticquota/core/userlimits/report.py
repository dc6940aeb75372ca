"""The usage view, bounded for metrics: at most N users (groups) per quota, the rest as one line.

Prometheus pays for every label value; one quota shared by thousands of users must not export
thousands of series. ``capped`` keeps, per kind and quota, the subjects with the most pods counted
(then by name, so the choice is stable) and sums the others into a subject named ``(other)`` that
has no limit of its own. The number of subjects folded away is returned for a metric of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from elasticquota.core.quantities.resources import add
from elasticquota.core.userlimits.limits import PODS
from elasticquota.core.userlimits.records import Kind, SubjectUsage

OTHER: Final = "(other)"


def capped(lines: Iterable[SubjectUsage], per_quota: int) -> tuple[list[SubjectUsage], int]:
    """The lines with at most ``per_quota`` subjects per kind and quota, plus one ``(other)``
    line per kind and quota that had more; and how many subjects were folded into those."""
    groups: dict[tuple[Kind, str], list[SubjectUsage]] = {}
    for line in lines:
        groups.setdefault((line.kind, line.quota), []).append(line)
    kept: list[SubjectUsage] = []
    folded = 0
    for (kind, quota), members in sorted(groups.items()):
        members.sort(key=lambda line: (-line.used.get(PODS, 0), line.name))
        kept.extend(members[:per_quota])
        rest = members[per_quota:]
        if not rest:
            continue
        folded += len(rest)
        used: dict[str, int] = {}
        applications: set[str] = set()  # grown in place: a frozenset union copies it each time
        for line in rest:
            used = add(used, line.used)
            applications.update(line.applications)
        kept.append(SubjectUsage(kind, OTHER, quota, used, frozenset(applications), None, None))
    return kept, folded
