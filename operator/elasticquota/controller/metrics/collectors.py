"""Gauges read from the operator's memory at scrape time, never kept up to date by the loops.

``QuotaCollector`` turns the latest solved results of each tree (``ControllerState.results``, set
by the tree loops) into the per-quota gauges: a deleted quota or tree simply is not there at the
next scrape, so there are no stale series and nothing to clean up. Only quotas that exist as
objects are shown (the virtual roots of profile trees are not). Units: cpu in cores, memory and
the other byte resources in bytes, every other resource in its plain unit, as the ``unit`` label
says. ``elastic_quota_tree_info`` names each tree shown (its profile, ``default`` for the default
tree) so that dashboards show names rather than tree ids. A figure that is not
set (a resource missing from ``spec.max``, a runtime that does not limit the resource) has no
series, and neither has a value at or above the operator's own "no limit" sentinels (the max of
the system and default quotas and of profile roots; 4.6e15 cores, 4 PiB, 4.6e15 units): neither 0
nor a huge number would tell the truth. Only the active replica solves, so the per-quota gauges
(and ``elastic_quota_gated_pods``) come from the Lease holder alone; a standby has none.

``StateCollector`` adds what the replica knows about itself: leader, ready, and the quotas left out
of their trees because they are broken.

At 10,000 quotas a scrape builds and encodes some 70,000 series, far beyond the event loop's
~100-ms budget, so ``/metrics`` encodes in a worker thread. What must be read on the loop (the
leader flag, readiness, the problem count, which brings the engine's topology up to date, the
references to each tree's results, and the frozen view of the user limits) is captured there
first (``capture_view``) and handed to the thread in ``SCRAPE_VIEW``; the results and the user
limits a view holds are never changed afterwards (a tree pass publishes a new mapping, the engine
freezes a new view), so the thread reads them safely. Without a captured view (a direct
``generate_latest`` on the loop, e.g. in tests) the collectors capture one themselves.

``UserLimitCollector`` (``users``) turns that view into the per-user and per-group gauges.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from elasticquota.controller.metrics.names import (
    DEFAULT_TREE_NAME,
    GATED_PODS,
    INVALID_QUOTAS,
    LEADER,
    QUOTA_FIGURES,
    QUOTA_LABELS,
    READY,
    TREE_INFO,
    resource_unit,
)
from elasticquota.core import keys
from elasticquota.core.keys import QUOTA_KIND
from elasticquota.core.model.models import Problem
from elasticquota.core.quantities.quantity import CPU, is_unlimited
from elasticquota.core.solve.results import QuotaResult
from elasticquota.core.userlimits.tracker import UserLimitsView

if TYPE_CHECKING:
    from elasticquota.controller.state import ControllerState


@dataclass(frozen=True, slots=True)
class ScrapeView:
    """What one scrape shows, read on the event loop (see the module's docstring)."""

    leading: bool
    ready: bool
    invalid_quotas: int
    gated: tuple[tuple[tuple[str, str], int], ...]
    #: Each tree's latest results, by tree id (mappings that are never changed once published).
    results: tuple[tuple[str, Mapping[str, QuotaResult]], ...]
    #: The user and group limits and usage, frozen (a view that never changes).
    user_limits: UserLimitsView


def capture_view(state: ControllerState, leading: asyncio.Event) -> ScrapeView:
    """The scrape's view of ``state``; cheap (no per-quota work), call it on the event loop."""
    return ScrapeView(
        leading=leading.is_set(),
        ready=state.ready(time.monotonic()),
        invalid_quotas=invalid_quotas(state),
        gated=tuple(sorted(state.gated.items())),
        results=tuple(sorted(state.results.items())),
        user_limits=state.engine.user_limits(),  # O(buckets); the caller rebuilt off the loop first
    )


#: The view captured on the loop for the scrape under way in this context (None: capture one).
SCRAPE_VIEW: ContextVar[ScrapeView | None] = ContextVar("scrape_view", default=None)


class ViewCollector:
    """A collector of what one scrape's view shows."""

    def __init__(self, state: ControllerState, leading: asyncio.Event) -> None:
        self._state = state
        self._leading = leading

    def view(self) -> ScrapeView:
        """This scrape's view: the one captured on the loop, else one captured now."""
        return SCRAPE_VIEW.get() or capture_view(self._state, self._leading)


def display_value(resource: str, units: int) -> float | None:
    """Engine units as exposed (cpu in cores, the rest as is); None for "no limit"."""
    if is_unlimited(resource, units):
        return None
    return units / 1000 if resource == CPU else float(units)


def figure_help(name: str) -> str:
    """The help text of the per-quota family ``name``."""
    return f"{QUOTA_FIGURES[name][1]}, per quota and resource"


def quota_figure(result: QuotaResult, field: str) -> Mapping[str, int]:
    """The figure ``field`` of ``result`` (``QUOTA_FIGURES``); an unset limit has no keys."""
    figures: Mapping[str, int] | None = getattr(result, field)
    return figures or {}


def _quota_families() -> dict[str, GaugeMetricFamily]:
    return {
        name: GaugeMetricFamily(name, figure_help(name), labels=QUOTA_LABELS)
        for name in QUOTA_FIGURES
    }


def _add_figures(family: GaugeMetricFamily, result: QuotaResult, values: Mapping[str, int]) -> None:
    for resource in sorted(values):
        value = display_value(resource, values[resource])
        if value is not None:
            labels = [result.tree, result.name, result.namespace, result.parent, resource]
            family.add_metric([*labels, resource_unit(resource)], value)


def _existing_results(state: ControllerState, view: ScrapeView) -> Iterator[QuotaResult]:
    """The results of quotas that exist as objects, tree by tree (none on a standby)."""
    if not view.leading:
        return
    quotas = state.quotas  # membership tests only: safe beside the loop's changes
    for _, results in view.results:
        for result in results.values():
            if (result.namespace, result.name) in quotas:
                yield result


class QuotaCollector(ViewCollector):
    """The per-quota gauges of the active replica, from the latest solved results (``/metrics``
    writes them with ``exposition.figures_text``; ``collect`` is prometheus_client's way)."""

    def describe(self) -> Iterator[Metric]:
        yield from _quota_families().values()

    def collect(self) -> Iterator[Metric]:
        families = _quota_families()
        for result in self.shown_results():
            for name, (field, _) in QUOTA_FIGURES.items():
                _add_figures(families[name], result, quota_figure(result, field))
        yield from families.values()

    def shown_results(self) -> Iterator[QuotaResult]:
        """The results this scrape shows: quotas that exist as objects, on the active replica."""
        return _existing_results(self._state, self.view())


class TreeInfoCollector(ViewCollector):
    """``elastic_quota_tree_info``: one series per tree shown, with its name."""

    def describe(self) -> Iterator[Metric]:
        yield _tree_info_family()

    def collect(self) -> Iterator[Metric]:
        names: dict[str, str] = {}
        for result in _existing_results(self._state, self.view()):
            names.setdefault(result.tree, DEFAULT_TREE_NAME if not result.tree else "")
            if not names[result.tree]:
                names[result.tree] = self._tree_name(result) or ""
        info = _tree_info_family()
        for tree, name in sorted(names.items()):
            info.add_metric([tree, name or tree], 1)
        yield info

    def _tree_name(self, result: QuotaResult) -> str | None:
        """The tree's name if ``result`` is its root quota: the profile that made it (label
        ``profile``), else the root quota's own name; None for any other quota."""
        quota = self._state.quotas.get((result.namespace, result.name))  # a read: thread-safe
        if quota is None or quota.labels.get(keys.LABEL_IS_ROOT) != "true":
            return None
        return quota.labels.get(keys.LABEL_PROFILE) or result.name


def _tree_info_family() -> GaugeMetricFamily:
    return GaugeMetricFamily(
        TREE_INFO,
        "One series (1) per quota tree: its id (the tree label of the other families) and its "
        "name (the profile's; default for the default tree)",
        labels=["tree", "tree_name"],
    )


def invalid_quotas(state: ControllerState) -> int:
    """ElasticQuota objects left out of their tree because they are broken (each has an Event).

    Only the problems that leave a quota out count (``Problem.left_out``); the others are notes
    on a quota that is still computed.
    """
    return len({problem.object for problem in state.problems() if _leaves_quota_out(problem)})


def _leaves_quota_out(problem: Problem) -> bool:
    return problem.left_out and problem.object.startswith(f"{QUOTA_KIND} ")


class StateCollector(ViewCollector):
    """Leader, ready, invalid quotas and gated pods: what this replica knows about itself."""

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(LEADER, _LEADER_HELP)
        yield GaugeMetricFamily(READY, _READY_HELP)
        yield GaugeMetricFamily(INVALID_QUOTAS, _INVALID_HELP)
        yield GaugeMetricFamily(GATED_PODS, _GATED_HELP, labels=["quota", "reason"])

    def collect(self) -> Iterator[Metric]:
        view = self.view()
        yield GaugeMetricFamily(LEADER, _LEADER_HELP, value=int(view.leading))
        yield GaugeMetricFamily(READY, _READY_HELP, value=int(view.ready))
        yield GaugeMetricFamily(INVALID_QUOTAS, _INVALID_HELP, value=view.invalid_quotas)
        gated = GaugeMetricFamily(GATED_PODS, _GATED_HELP, labels=["quota", "reason"])
        if view.leading:
            for (quota, reason), count in view.gated:
                gated.add_metric([quota, reason], count)
        yield gated


_LEADER_HELP = "1 while this replica holds the leader Lease (the active replica), else 0"
_READY_HELP = (
    "1 while the listing of every kind is in memory and every watch is connected (or has been "
    "down for less than a few seconds), else 0"
)
_INVALID_HELP = "ElasticQuota objects left out of their tree because they are broken"
_GATED_HELP = (
    "Pods held back by the admission gate at the last gating round, per quota and reason "
    "(quota, user-limit, group-limit)"
)
