"""Per-user and per-group gauges, read from the user limits' frozen view at scrape time.

For every user (group) at every quota where it has usage or a limit naming it (the lines of
``plan -o json``'s ``users``/``groups``): what its running pods hold per resource
(``elastic_quota_user_used``), its running applications (``elastic_quota_user_applications``),
and the limit in force: per resource (``elastic_quota_user_limit``) and on the number of
applications (``elastic_quota_user_max_applications``, a family of its own so that no family
mixes resources and counts); the ``_group_`` twins carry a ``group`` label instead of ``user``.
Units as the per-quota gauges (cpu in cores); a limit that does not limit (a resource it does not
list, ``maxapplications`` 0) has no series.

Cardinality guard: per quota, at most ``USER_METRICS_MAX_PER_QUOTA`` users and as many groups
get series of their own, those with the most pods counted (``core.userlimits.report.capped``);
the others are summed under ``user="(other)"`` (``group="(other)"``), which has no limit series,
and ``elastic_quota_user_subjects_folded{kind}`` says how many were folded at this scrape.

Like the per-quota gauges these come from the active replica alone, and are built in the scrape's
worker thread from a view captured on the event loop (``collectors.ScrapeView``): the walk grows
with the subjects and applications counted, never on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from elasticquota.controller.metrics.collectors import ViewCollector, display_value
from elasticquota.controller.metrics.names import (
    SUBJECT_FAMILIES,
    USER_SUBJECTS_FOLDED,
    resource_unit,
)
from elasticquota.core.userlimits.records import Kind, SubjectUsage
from elasticquota.core.userlimits.report import capped
from elasticquota.core.userlimits.tracker import UserLimitsView

if TYPE_CHECKING:
    from elasticquota.controller.state import ControllerState

KINDS: tuple[Kind, ...] = ("user", "group")
#: Subjects of each kind per quota with series of their own, unless told (the setting's default).
DEFAULT_USERS_PER_QUOTA = 20

_HELP = {
    "used": "What the {kind}'s running pods hold, per quota (its subtree) and resource",
    "applications": "The {kind}'s running applications, per quota (its subtree)",
    "limit": "The {kind} limit in force, per quota and resource (resources it lists)",
    "max_applications": "The {kind} limit on running applications in force, per quota",
}


def _families(kind: Kind) -> tuple[GaugeMetricFamily, ...]:
    used, applications, limit, max_applications = SUBJECT_FAMILIES[kind]
    with_resource = ["tree", "quota", kind, "resource", "unit"]
    without = ["tree", "quota", kind]
    return (
        GaugeMetricFamily(used, _HELP["used"].format(kind=kind), labels=with_resource),
        GaugeMetricFamily(applications, _HELP["applications"].format(kind=kind), labels=without),
        GaugeMetricFamily(limit, _HELP["limit"].format(kind=kind), labels=with_resource),
        GaugeMetricFamily(
            max_applications, _HELP["max_applications"].format(kind=kind), labels=without
        ),
    )


def _folded_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        USER_SUBJECTS_FOLDED,
        "Users (kind=user) and groups (kind=group) summed under (other) by the per-quota "
        "cardinality guard (USER_METRICS_MAX_PER_QUOTA), at this scrape",
        labels=["kind"],
    )


def _add_line(families: tuple[GaugeMetricFamily, ...], tree: str, line: SubjectUsage) -> None:
    used, applications, limit, max_applications = families
    for resource in sorted(line.used):
        value = display_value(resource, line.used[resource])
        if value is not None:
            used.add_metric([tree, line.quota, line.name, resource, resource_unit(resource)], value)
    applications.add_metric([tree, line.quota, line.name], len(line.applications))
    entry = line.limit
    if entry is None:
        return
    for resource in sorted(entry.max_resources):
        value = display_value(resource, entry.max_resources[resource])
        if value is not None:
            unit = resource_unit(resource)
            limit.add_metric([tree, line.quota, line.name, resource, unit], value)
    if entry.max_applications:
        max_applications.add_metric([tree, line.quota, line.name], entry.max_applications)


def subject_metrics(
    view: UserLimitsView, per_quota: int
) -> tuple[dict[Kind, tuple[GaugeMetricFamily, ...]], dict[Kind, int]]:
    """The families of each kind, filled from ``view``, and how many subjects each folded."""
    families = {kind: _families(kind) for kind in KINDS}
    folded = dict.fromkeys(KINDS, 0)
    for tree, lines in view.usage_by_tree():
        for kind in KINDS:
            kept, count = capped([line for line in lines if line.kind == kind], per_quota)
            folded[kind] += count
            for line in kept:
                _add_line(families[kind], tree, line)
    return families, folded


class UserLimitCollector(ViewCollector):
    """The per-user and per-group gauges of the active replica (see the module's docstring)."""

    def __init__(self, state: ControllerState, leading: asyncio.Event, per_quota: int) -> None:
        super().__init__(state, leading)
        self._per_quota = per_quota

    def describe(self) -> Iterator[Metric]:
        for kind in KINDS:
            yield from _families(kind)
        yield _folded_family()

    def collect(self) -> Iterator[Metric]:
        view = self.view()
        folded_family = _folded_family()
        if not view.leading:
            for kind in KINDS:
                yield from _families(kind)
            yield folded_family
            return
        families, folded = subject_metrics(view.user_limits, self._per_quota)
        for kind in KINDS:
            yield from families[kind]
            folded_family.add_metric([kind], folded[kind])
        yield folded_family
