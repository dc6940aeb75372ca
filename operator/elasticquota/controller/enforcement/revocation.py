"""Over-use revocation: a quota that stays above its runtime gives back its least important pods.

Every ``revocation_interval`` the active replica checks every quota (not the root nor the system
quota; the default quota only when enabled): a cheap look at each result, and the pods of the quotas
whose used exceeds their runtime only. A quota whose used exceeds its runtime for longer than
``revocation_delay`` gets one revocation round: the victims of
``core.decisions.revocation.round_choice``, the function ``plan`` uses too (least important first to
try: lower priority, then the later start time; non-preemptible and terminating pods never) are
evicted through the Eviction API, at most ``eviction_rate`` per second, with an Event on the pod and
on the quota. A PodDisruptionBudget's 429 leaves the pod; the next round tries again (with
``revocation_around_budgets`` the round chooses its other victims around it). With
``revocation_min_runtime`` (or the quota's ``revocation-min-runtime`` annotation, or its nearest
ancestor's) pods that have run less than that are not chosen (the round names them in its Event)
and the quota's next round is due when the first of them may go. The start of
each over-use is kept on the quota (``elasticquota.dev/over-used-since``, written when it begins and
removed when it ends, never rewritten by a round; a refused write is sent again at the next check),
so a restart during the delay neither forgets it nor evicts twice, and a replica that becomes the
active one takes its timers from these records, not from what it saw before. A quota that stays
over-used with nothing evictable gets a round every delay, each with the same ``QuotaOverUsed``
Event, which the Event series counts (``kube.events``): one Event object whose count grows, not a
new Event every delay. In dry-run, rounds are reported and nothing is evicted: the dry run's
``Cluster`` sends nothing and logs what it would evict. Every eviction (here and by in-quota
preemption, through ``counted_eviction``) is counted by quota, reason (``over-use`` here,
``preemption`` there) and outcome; each check shows the timed over-uses in the metrics
(``controller.metrics.overuse``), which the over-runtime alerts wait on.

A check does not solve the trees itself more often than every ``SOLVE_EVERY`` seconds: between
those it judges over-use on what the tree loops last solved (``QuotaEngine.latest``, at most a
pass old; the delay is minutes). During a burst every solve turns all 10,000 rows of a big tree
into new results, and a solve forced every second took a third of the operator's time. Solves run
off the event loop (``controller.solving``).
A round's victims are always chosen on a fresh solve, and only if the quota is still over-used;
``rounds`` evicts each one only if, on a solve at most a second old when its turn comes (the
evictions are paced; a fresh solve at most once a second, as a forced solve is costly in a
burst), the quota still needs it gone.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable

from elasticquota.controller.context import LoopContext, WritingLoop
from elasticquota.controller.enforcement.evictions import RateLimiter
from elasticquota.controller.enforcement.rounds import RoundEvictions
from elasticquota.controller.metrics.overuse import OverUseTimers
from elasticquota.controller.solving import published_snapshot, solved_snapshot
from elasticquota.core import keys
from elasticquota.core.decisions.minruntime import (
    NO_MIN_RUNTIME,
    MinRuntime,
    inherited_min_runtime,
)
from elasticquota.core.decisions.overuse import (
    ANNO_OVER_USED_SINCE,
    OverUseTimer,
    format_since,
    parse_since,
)
from elasticquota.core.decisions.revocation import (
    RoundChoice,
    quota_is_over_used,
    round_choice,
)
from elasticquota.core.generic.timeslice import SLICE_BUDGET, TimeSlice
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

#: Seconds between two solves a revocation check makes itself (see the module's docstring).
SOLVE_EVERY = 5.0

#: At most this many seconds pass between two looks at whether this replica still leads while
#: the loop pauses between checks (another replica's term lasts a Lease duration at least).
LEADING_POLL = 1.0

NEVER_REVOKED = (keys.ROOT_QUOTA, keys.SYSTEM_QUOTA)


class RevocationController(WritingLoop):
    """Checks over-use, keeps the timers on the quotas, and evicts when a round is due."""

    def __init__(
        self,
        context: LoopContext,
        clock: Callable[[], float] = time.time,
        limiter: RateLimiter | None = None,
        judge: Callable[[Snapshot, str], bool] = quota_is_over_used,
        slice_budget: float = SLICE_BUDGET,
    ) -> None:
        """``limiter`` is shared with in-quota preemption (one eviction budget); ``judge`` says
        whether a quota of a snapshot is due a round once its over-use lasts (a test watches it
        look at the pods); ``slice_budget``: seconds of a check between two yields."""
        super().__init__(context)
        self._clock = clock
        self._judge = judge
        self._slice_budget = slice_budget
        self._timer = OverUseTimer(context.settings.revocation_delay)
        eviction_budget = limiter or RateLimiter(context.settings.eviction_rate)
        self._rounds = RoundEvictions(context, eviction_budget, judge, self._min_runtime)
        #: Its own outage log: the rounds' Events go through while quota writes fail (the quota
        #: webhook down); one log for both would end in the log an outage that goes on.
        self._records = OutageLog(logger, "revocation's over-use records")
        self._solved_at: float | None = None
        #: Quotas whose over-use record could not be written (sent again at the next check).
        self._unrecorded: set[str] = set()
        #: The over-use starts the metrics show (``_publish_timers``).
        self._published: dict[str, float] = {}

    async def run(self) -> None:
        await self._state.synced.wait()
        while True:
            await self._leading.wait()
            self._restore_timers()
            while await self._checked_while_leading():
                pass

    async def _checked_while_leading(self) -> bool:
        """One check and the pause after it; False when this replica stopped leading by the end
        of the pause (the next term starts from the quotas' records)."""
        await self.check_once()
        pause = self._settings.revocation_interval
        while pause > 0 and self._leading.is_set():
            step = min(pause, LEADING_POLL)
            await asyncio.sleep(step)
            pause -= step
        return self._leading.is_set()

    def _restore_timers(self) -> None:
        """At the start of each term as the active replica, the over-use timers are the quotas'
        records: over-uses that started before a restart, or while another replica was active,
        keep their start; one that ended meanwhile is not timed any more."""
        self._timer = OverUseTimer(self._settings.revocation_delay)
        self._unrecorded.clear()
        for quota in self._state.quotas.values():
            since = parse_since(quota.annotations.get(ANNO_OVER_USED_SINCE))
            if since is not None:
                self._timer.restore(quota.name, since)

    def _monitored(self, name: str) -> bool:
        if name in NEVER_REVOKED:
            return False
        return name != keys.DEFAULT_QUOTA or self._settings.revoke_default_quota

    async def check_once(self) -> None:
        """One check of every monitored quota; a round for each one that is due. It yields to
        the event loop after each slice of work (``SLICE_BUDGET``): in a mass over-use (a node
        pool lost: 10,000 quotas over their runtime) a check looks at every quota's pods, 50-70
        ms in one stretch before."""
        now = self._clock()
        snapshot = await self._snapshot(now)
        stretch = TimeSlice(self._slice_budget)
        for name in self._candidates(snapshot):
            if stretch.due():
                await asyncio.sleep(0)
                stretch.restart()
            result = snapshot.quotas[name]
            before = self._timer.since.get(name)
            due = self._timer.observe(name, self._judge(snapshot, name), now)
            if self._timer.since.get(name) != before or name in self._unrecorded:
                await self._persist_since(result)
            if due:
                await self._round(name, now)
        self._publish_timers()

    @property
    def evicted(self) -> collections.deque[str]:
        """The most recent evictions of the rounds (bounded)."""
        return self._rounds.evicted

    def _publish_timers(self) -> None:
        """Show the timed over-uses in the metrics, when they changed (a copy: timers go on)."""
        if self._timer.since != self._published:
            self._published = dict(self._timer.since)
            default = self._settings.revocation_min_runtime
            self._metrics.over_use_timers(OverUseTimers(self._published, default))

    async def _round(self, name: str, now: float) -> None:
        """One revocation round of quota ``name``, on a fresh solve; with a minimum runtime, the
        next round is due when the first pod it spared for it may go."""
        fresh = await solved_snapshot(self._state.engine, self._metrics)
        if name not in fresh.quotas or not self._judge(fresh, name):
            return
        choice = round_choice(fresh, name, min_runtime=self._min_runtime(name, now))
        young = choice.min_runtime
        if choice.spared:
            self._timer.due_again_by(name, min(young.ends(pod) for pod in choice.spared))
        await self._rounds.revoke(fresh.quotas[name], choice.victims, self._spared_text(choice))

    def _min_runtime(self, quota: str, now: float | None = None) -> MinRuntime:
        """The protection of the quota's pods younger than its ``revocation-min-runtime``
        annotation (or an ancestor's), else ``revocation_min_runtime``, as of ``now`` (None: the
        clock's)."""
        setting = self._settings.revocation_min_runtime
        seconds = inherited_min_runtime(quota, self._state.engine.quota, setting)
        if seconds <= 0:
            return NO_MIN_RUNTIME  # the clock is not read
        return MinRuntime(seconds, self._clock() if now is None else now)

    @staticmethod
    def _spared_text(choice: RoundChoice) -> str:
        """``; spared until they have run 600s: ns/a (until 2026-...Z), ...`` ('' for none)."""
        if not choice.spared:
            return ""
        young = choice.min_runtime
        pods = ", ".join(f"{pod.key} (until {young.ends_text(pod)})" for pod in choice.spared)
        return f"; spared until they have run {young.seconds:g}s: {pods}"

    async def _snapshot(self, now: float) -> Snapshot:
        """A solve every ``SOLVE_EVERY`` seconds; what the tree loops last solved in between."""
        if self._solved_at is None or abs(now - self._solved_at) >= SOLVE_EVERY:
            self._solved_at = now
            return await solved_snapshot(self._state.engine, self._metrics)
        return await published_snapshot(self._state.engine, self._metrics)

    def _candidates(self, snapshot: Snapshot) -> list[str]:
        """The monitored quotas a check can change anything for, sorted: those whose used exceeds
        their runtime, those whose over-use timer runs (it stops when they fit again) and those
        whose over-use record is still to be written. For any other quota a check records nothing
        and evicts nothing; its pods are never looked at."""
        quotas = snapshot.quotas
        self._forget_vanished()
        over = snapshot.over_used_quotas()  # kept by the engine: no look at every quota
        timed = [name for name in (*self._timer.since, *self._unrecorded) if name in quotas]
        return sorted({name for name in (*over, *timed) if self._monitored(name)})

    def _forget_vanished(self) -> None:
        """Timers of quotas in no tree any more (deleted, or left out as invalid) stop: an
        over-use that comes back later starts anew. (The annotation of a quota left out is
        removed with its other computed annotations, ``controller.reconcile.problems``.)"""
        engine = self._state.engine
        for name in [name for name in self._timer.since if engine.tree_of_result(name) is None]:
            self._timer.forget(name)
        self._unrecorded = {
            name for name in self._unrecorded if engine.tree_of_result(name) is not None
        }

    async def _persist_since(self, result: QuotaResult) -> None:
        """Keep the over-use start on the quota object; a refused write is sent again at the
        next check (``_unrecorded``)."""
        since = self._timer.since.get(result.name)
        value = format_since(since) if since is not None else None
        quota = self._state.quotas.get((result.namespace, result.name))
        if quota is None or quota.annotations.get(ANNO_OVER_USED_SINCE) == value:
            return
        patch = {"metadata": {"annotations": {ANNO_OVER_USED_SINCE: value}}}
        try:
            body = await self._cluster.patch_quota(result.namespace, result.name, patch)
        except Exception as error:
            self._records.failed(f"the over-use record of {result.name}", error)
            self._unrecorded.add(result.name)
            return
        self._records.succeeded()
        self._unrecorded.discard(result.name)
        self._state.keep_written(body)  # None: not sent (a dry run)
