"""Gauges read from the operator's memory at scrape time, never kept up to date by the loops.

``QuotaCollector`` turns the latest solved results of each tree (``ControllerState.results``, set
by the tree loops) into the per-quota gauges: a deleted quota or tree simply is not there at the
next scrape, so there are no stale series and nothing to clean up. Only quotas that exist as
objects are shown (the virtual roots of profile trees are not). Units: cpu in cores, memory and
the other byte resources in bytes, every other resource in its plain unit. A figure that is not
set (a resource missing from ``spec.max``, a runtime that does not limit the resource) has no
series, and neither has a value at or above the operator's own "no limit" sentinels (the max of
the system and default quotas and of profile roots; 4.6e15 cores, 4 PiB, 4.6e15 units): neither 0
nor a huge number would tell the truth. Only the active replica solves, so the per-quota gauges
(and ``elastic_quota_gated_pods``) come from the Lease holder alone; a standby has none.

``StateCollector`` adds what the replica knows about itself: leader, ready, and the quotas left out
of their trees because they are broken.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric

from elasticquota.controller.metrics.names import (
    GATED_PODS,
    INVALID_QUOTAS,
    LEADER,
    QUOTA_FIGURES,
    QUOTA_LABELS,
    READY,
)
from elasticquota.core.keys import QUOTA_KIND
from elasticquota.core.models import Problem
from elasticquota.core.quantity import CPU, is_unlimited
from elasticquota.core.results import QuotaResult

if TYPE_CHECKING:
    from elasticquota.controller.state import ControllerState


def display_value(resource: str, units: int) -> float | None:
    """Engine units as exposed (cpu in cores, the rest as is); None for "no limit"."""
    if is_unlimited(resource, units):
        return None
    return units / 1000 if resource == CPU else float(units)


def _quota_families() -> dict[str, GaugeMetricFamily]:
    return {
        name: GaugeMetricFamily(name, f"{text}, per quota and resource", labels=QUOTA_LABELS)
        for name, (_, text) in QUOTA_FIGURES.items()
    }


def _add_figures(family: GaugeMetricFamily, result: QuotaResult, values: Mapping[str, int]) -> None:
    for resource in sorted(values):
        value = display_value(resource, values[resource])
        if value is not None:
            labels = [result.tree, result.name, result.namespace, result.parent, resource]
            family.add_metric(labels, value)


class QuotaCollector:
    """The per-quota gauges of the active replica, from the latest solved results."""

    def __init__(self, state: ControllerState, leading: asyncio.Event) -> None:
        self._state = state
        self._leading = leading

    def describe(self) -> Iterator[Metric]:
        yield from _quota_families().values()

    def collect(self) -> Iterator[Metric]:
        families = _quota_families()
        if self._leading.is_set():
            for result in self._existing_results():
                for name, (field, _) in QUOTA_FIGURES.items():
                    _add_figures(families[name], result, getattr(result, field))
        yield from families.values()

    def _existing_results(self) -> Iterator[QuotaResult]:
        """Results of quotas that exist as objects, tree by tree."""
        for tree_id in sorted(self._state.results):
            for result in self._state.results[tree_id].values():
                if (result.namespace, result.name) in self._state.quotas:
                    yield result


def invalid_quotas(state: ControllerState) -> int:
    """ElasticQuota objects left out of their tree because they are broken (each has an Event).

    Only the problems that leave a quota out count (``Problem.left_out``); the others are notes
    on a quota that is still computed.
    """
    return len({problem.object for problem in state.problems() if _leaves_quota_out(problem)})


def _leaves_quota_out(problem: Problem) -> bool:
    return problem.left_out and problem.object.startswith(f"{QUOTA_KIND} ")


class StateCollector:
    """Leader, ready, invalid quotas and gated pods: what this replica knows about itself."""

    def __init__(self, state: ControllerState, leading: asyncio.Event) -> None:
        self._state = state
        self._leading = leading

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(LEADER, _LEADER_HELP)
        yield GaugeMetricFamily(READY, _READY_HELP)
        yield GaugeMetricFamily(INVALID_QUOTAS, _INVALID_HELP)
        yield GaugeMetricFamily(GATED_PODS, _GATED_HELP, labels=["quota"])

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(LEADER, _LEADER_HELP, value=int(self._leading.is_set()))
        ready = self._state.ready(time.monotonic())
        yield GaugeMetricFamily(READY, _READY_HELP, value=int(ready))
        yield GaugeMetricFamily(INVALID_QUOTAS, _INVALID_HELP, value=invalid_quotas(self._state))
        gated = GaugeMetricFamily(GATED_PODS, _GATED_HELP, labels=["quota"])
        if self._leading.is_set():
            for quota, count in sorted(self._state.gated.items()):
                gated.add_metric([quota], count)
        yield gated


_LEADER_HELP = "1 while this replica holds the leader Lease (the active replica), else 0"
_READY_HELP = (
    "1 while the listing of every kind is in memory and every watch is connected (or has been "
    "down for less than a few seconds), else 0"
)
_INVALID_HELP = "ElasticQuota objects left out of their tree because they are broken"
_GATED_HELP = "Pods held back by the admission gate at the last gating round, per quota"
