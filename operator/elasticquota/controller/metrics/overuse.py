"""The over-used quotas' revocation timers, per quota: what the over-runtime alerts wait for.

The revocation loop (``controller.enforcement.revocation``) times each quota above its runtime: a
round is due once the over-use has lasted longer than the revocation delay, and pods younger than
the quota's minimum runtime are spared until they reach it. Giving back all it can may therefore
take the delay plus that minimum, which a quota may set for itself and its descendants (annotation
``elasticquota.dev/revocation-min-runtime``): an alert's fixed ``for:`` cannot wait for each
quota's own. So, for each quota whose over-use revocation is timing:

* ``elastic_quota_over_used_since_timestamp_seconds``: when the over-use began (epoch seconds; the
  quota's ``over-used-since`` record, which a new active replica takes over; a dry run keeps it in
  memory only);
* ``elastic_quota_revocation_min_runtime_seconds``: the minimum runtime of its pods (its own
  annotation, else its nearest ancestor's, else the operator's ``REVOCATION_MIN_RUNTIME``).

The loop publishes the starts when they change (``OverUseTimers``, never changed afterwards); the
collector reads the latest publication in the scrape's thread, each quota's labels from the
results of the scrape's view and its minimum from the engine's quotas (lookups only, as the other
collectors do). A standby times nothing and shows nothing; neither does a replica with revocation
off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

from elasticquota.controller.metrics.collectors import ViewCollector
from elasticquota.controller.metrics.names import (
    OVER_USE_LABELS,
    OVER_USED_SINCE,
    REVOCATION_MIN_RUNTIME,
)
from elasticquota.core.decisions.minruntime import inherited_min_runtime
from elasticquota.core.solve.results import QuotaResult


@dataclass(frozen=True, slots=True)
class OverUseTimers:
    """What the revocation loop published: the start of each timed over-use, by quota name, and
    the operator's minimum runtime (what a quota without an annotation up its tree gets)."""

    since: Mapping[str, float]
    default_min_runtime: float


class OverUseCollector(ViewCollector):
    """The two per-quota families of the quotas the revocation loop times (see the module)."""

    #: The loop's latest publication (``Metrics.over_use_timers``); None: nothing timed yet.
    timers: OverUseTimers | None = None

    def describe(self) -> Iterator[Metric]:
        yield from _families()

    def collect(self) -> Iterator[Metric]:
        since_family, min_runtime_family = _families()
        timers, view = self.timers, self.view()
        if timers is not None and view.leading:
            results = dict(view.results)
            quota_of, default = self._state.engine.quota, timers.default_min_runtime
            for name, since in sorted(timers.since.items()):
                result = self._result(results, name)
                if result is None:
                    continue
                labels = [result.tree, result.name, result.namespace, result.parent]
                since_family.add_metric(labels, since)
                min_runtime_family.add_metric(
                    labels, inherited_min_runtime(name, quota_of, default)
                )
        yield since_family
        yield min_runtime_family

    def _result(
        self, results: Mapping[str, Mapping[str, QuotaResult]], name: str
    ) -> QuotaResult | None:
        """Quota ``name``'s result in its tree, if it still is in one and exists as an object."""
        tree = self._state.engine.tree_of_result(name)
        result = None if tree is None else results.get(tree, {}).get(name)
        if result is None or (result.namespace, result.name) not in self._state.quotas:
            return None
        return result


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    return (
        GaugeMetricFamily(
            OVER_USED_SINCE,
            "When the quota's current over-use (used above runtime) began, as revocation times "
            "it, in seconds since the epoch; only quotas over their runtime",
            labels=OVER_USE_LABELS,
        ),
        GaugeMetricFamily(
            REVOCATION_MIN_RUNTIME,
            "The minimum runtime of the over-used quota's pods before revocation may evict them "
            "(its annotation, an ancestor's, or the operator's setting); only quotas over their "
            "runtime",
            labels=OVER_USE_LABELS,
        ),
    )
