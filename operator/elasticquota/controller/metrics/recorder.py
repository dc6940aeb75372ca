"""The operator's instruments: counters and histograms the loops feed, and what ``/metrics`` serves.

Nothing is registered at import: ``Metrics()`` makes its instruments on registries of its own
(never the process-wide default), and ``watch`` adds the collectors that read the memory at scrape
time. Controllers built without one (tests,
the CLI) get a private, unscraped registry, so they never need to check for "no metrics".
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from elasticquota import __version__
from elasticquota.controller.metrics.collectors import (
    QuotaCollector,
    StateCollector,
    TreeInfoCollector,
)
from elasticquota.controller.metrics.exposition import exposition
from elasticquota.controller.metrics.names import (
    ADMISSION_WAIT_BUCKETS,
    ADMISSION_WAIT_SECONDS,
    ADMISSIONS,
    ADMITTED,
    API_ERRORS,
    DENIED,
    EVENT_LOOP_LAG_SECONDS,
    EVENT_LOOP_MAX_LAG,
    EVICTIONS,
    INFO,
    LEASE_RENEW_FAILURES,
    LOOP_LAG_BUCKETS,
    POD_EVENT_BUCKETS,
    POD_EVENT_TO_WRITE_SECONDS,
    RECONCILE_BUCKETS,
    RECONCILE_SECONDS,
    RENEW_FAILURE_REASONS,
    SOLVE_BUCKETS,
    SOLVE_SECONDS,
    WEBHOOK_REQUESTS,
)
from elasticquota.controller.metrics.overuse import OverUseCollector, OverUseTimers
from elasticquota.controller.metrics.readers import ReaderCollector
from elasticquota.controller.metrics.users import DEFAULT_USERS_PER_QUOTA, UserLimitCollector

if TYPE_CHECKING:
    from elasticquota.controller.state import ControllerState


class Metrics:
    """Counters and histograms of one operator, and what ``/metrics`` serves.

    ``registry`` holds every family (``generate_latest`` of it is the whole exposition); the
    ``/metrics`` handler encodes the families of ``served`` (all but the per-quota figures) with
    prometheus_client and writes the figures itself (``exposition``: 10,000 quotas' figures are
    too many series for prometheus_client's per-sample encoding)."""

    def __init__(self) -> None:
        self.served = CollectorRegistry()
        self.registry = CollectorRegistry()
        self.registry.register(self.served)
        self._figures: QuotaCollector | None = None
        self._over_uses: OverUseCollector | None = None
        on = self.served
        self._evictions = Counter(
            EVICTIONS, "Pod evictions per quota, by what decided them (over-use: revocation; "
            "preemption: in-quota preemption) and outcome", ["quota", "reason", "result"],
            registry=on,
        )  # fmt: skip
        self._admissions = Counter(
            ADMISSIONS, "Pod admission decisions per quota: gated pods released (admitted), "
            "pods refused by the validate-pod webhook, dry runs aside (denied)",
            ["quota", "result"], registry=on,
        )  # fmt: skip
        self._api_errors = Counter(
            API_ERRORS, "Failed Kubernetes API requests of the operator (each attempt)",
            ["verb", "code"], registry=on,
        )  # fmt: skip
        self._webhook_requests = Counter(
            WEBHOOK_REQUESTS, "Admission webhook requests by answer", ["webhook", "result"],
            registry=on,
        )  # fmt: skip
        self._renew_failures = Counter(
            LEASE_RENEW_FAILURES, "Renewals of the leader Lease that failed on the active replica: "
            "error (refused or unreachable), timeout (no answer within the renew deadline), lost "
            "(another replica holds it)", ["reason"], registry=on,
        )  # fmt: skip
        for reason in RENEW_FAILURE_REASONS:  # at 0 from the start: rate() sees the first one
            self._renew_failures.labels(reason=reason)
        self._solve = Histogram(
            SOLVE_SECONDS, "Engine solve of one tree", ["tree"], buckets=SOLVE_BUCKETS, registry=on
        )
        self._reconcile = Histogram(
            RECONCILE_SECONDS, "One tree pass: solve, diff and writes", buckets=RECONCILE_BUCKETS,
            registry=on,
        )  # fmt: skip
        self._pod_event_to_write = Histogram(
            POD_EVENT_TO_WRITE_SECONDS, "From the first pod event that made a tree out of date "
            "to the end of the writes that show it", buckets=POD_EVENT_BUCKETS, registry=on,
        )  # fmt: skip
        self._admission_wait = Histogram(
            ADMISSION_WAIT_SECONDS, "How long released pods waited at the admission gate (from "
            "their creation, when the gate was added, to their release), per tree and quota",
            ["tree", "quota"], buckets=ADMISSION_WAIT_BUCKETS, registry=on,
        )  # fmt: skip
        self._loop_lag = Histogram(
            EVENT_LOOP_LAG_SECONDS, "How late the event loop woke a probe that sleeps 50 ms: "
            "the time something else held the loop", buckets=LOOP_LAG_BUCKETS, registry=on,
        )  # fmt: skip
        self._loop_max_lag = Gauge(
            EVENT_LOOP_MAX_LAG, "The longest event-loop lag seen since the operator started",
            registry=on,
        )  # fmt: skip
        self.max_loop_lag = 0.0
        info = Gauge(INFO, "The operator's version (always 1)", ["version"], registry=on)
        info.labels(version=__version__).set(1)

    def watch(
        self,
        state: ControllerState,
        leading: asyncio.Event,
        users_per_quota: int = DEFAULT_USERS_PER_QUOTA,
    ) -> None:
        """Serve the gauges read from ``state`` at scrape time (per quota, per user and group,
        leader, ready, ...); ``users_per_quota``: the user metrics' cardinality guard."""
        self._figures = QuotaCollector(state, leading)
        self.registry.register(self._figures)
        self.served.register(TreeInfoCollector(state, leading))
        self.served.register(UserLimitCollector(state, leading, users_per_quota))
        self.served.register(StateCollector(state, leading))
        self._over_uses = OverUseCollector(state, leading)
        self.served.register(self._over_uses)
        self.served.register(ReaderCollector(state))

    def exposition(self, accept: str) -> tuple[list[bytes], str]:
        """The ``/metrics`` body for a scraper that sent the ``Accept`` header ``accept``, in
        chunks, and its content type (run it off the event loop: see ``collectors``)."""
        return exposition(self.served, self._figures, accept)

    # -- what the loops report ------------------------------------------------------------------

    def eviction(self, quota: str, reason: str, result: str) -> None:
        """One eviction attempt decided by ``reason`` (``over-use`` or ``preemption``) that ended
        ``evicted``, ``blocked``, ``gone`` or ``failed``."""
        self._evictions.labels(quota=quota, reason=reason, result=result).inc()

    def admitted(self, quota: str) -> None:
        self._admissions.labels(quota=quota, result=ADMITTED).inc()

    def admission_waited(self, tree: str, quota: str, seconds: float) -> None:
        """A gated pod of ``quota`` released after ``seconds`` at the gate."""
        self._admission_wait.labels(tree=tree, quota=quota).observe(max(0.0, seconds))

    def denied(self, quota: str) -> None:
        self._admissions.labels(quota=quota, result=DENIED).inc()

    def api_error(self, verb: str, code: str) -> None:
        """The ``ApiErrorObserver`` of the operator's API client."""
        self._api_errors.labels(verb=verb, code=code).inc()

    def webhook_request(self, webhook: str, result: str) -> None:
        """One admission request answered ``allowed``, ``denied`` or ``error``."""
        self._webhook_requests.labels(webhook=webhook, result=result).inc()

    def lease_renew_failed(self, reason: str) -> None:
        """The ``RenewFailureObserver`` of the leader election."""
        self._renew_failures.labels(reason=reason).inc()

    def solved(self, tree: str, seconds: float) -> None:
        self._solve.labels(tree=tree).observe(seconds)

    def reconciled(self, seconds: float) -> None:
        self._reconcile.observe(seconds)

    def pod_event_written(self, seconds: float) -> None:
        self._pod_event_to_write.observe(seconds)

    def over_use_timers(self, timers: OverUseTimers) -> None:
        """The revocation loop's over-use timers, shown from the next scrape on (per quota: since
        when, and its pods' minimum runtime); nothing before ``watch``."""
        if self._over_uses is not None:
            self._over_uses.timers = timers

    def loop_lag(self, seconds: float) -> None:
        self._loop_lag.observe(seconds)
        if seconds > self.max_loop_lag:
            self.max_loop_lag = seconds
            self._loop_max_lag.set(seconds)
