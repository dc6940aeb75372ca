"""Broken objects reported where users look: on the object itself, as Events and as a marker.

After each reconcile pass, every current problem about an ElasticQuota that exists gets one Warning
Event (reason ``InvalidElasticQuota``) naming the rule; the same message is not posted again while
it stands, and is posted anew if it comes back after being fixed. The quota is left out of its tree
by the engine; every other quota keeps being computed and written.

A problem is reported (logged, posted, marked) once it has stood for ``grace`` seconds: objects
applied together are seen one by one, and a state that heals itself a moment later is no problem
to warn about. The case that made it needed: a profile and its child quotas applied at once (the
children name the profile's root quota, which the operator writes ``profile_debounce`` seconds
later) gave each child an "orphaned" Warning Event, a marker written and removed again. A problem
is logged once while it stands, even while its Event cannot be posted (tried again each report).

A quota left out of its tree has no result, so the tree loops no longer write it; what they wrote
while it was valid would stay on it, and consumers would trust figures nothing maintains. Each
report therefore brings every quota left out in line with ``core.decisions.diff.invalid_write``: its
computed annotations and ``status.used`` removed, ``elasticquota.dev/invalid`` naming the problems.
Only what differs is written (nothing for a quota already marked), through the reconciler's writer;
a refused write is tried again at the next report, and does not hold back the others. Once the quota
is valid again, its tree loop writes its figures back and removes the marker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.reconcile.writer import Writer
from elasticquota.controller.solving import rebuild_off_loop
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.diff import QuotaWrite, invalid_quotas, invalid_write
from elasticquota.core.keys import RESERVED_QUOTAS
from elasticquota.core.model.models import Problem
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

REASON = "InvalidElasticQuota"
#: How long a problem must stand before it is reported, beyond the profile controller's debounce
#: (the operator's own writes of profile roots): what objects applied together pass through.
SETTLE_SECONDS = 3.0


@dataclass
class Settling:
    """Which problems have stood for ``grace`` seconds, by ``clock``; the others are remembered
    from when they were first seen."""

    grace: float = 0.0
    clock: Callable[[], float] = time.monotonic
    _since: dict[tuple[str, str], float] = field(default_factory=dict)

    def standing(self, problems: list[Problem]) -> list[Problem]:
        now = self.clock()
        keys = [(problem.object, problem.message) for problem in problems]
        self._since = {key: self._since.get(key, now) for key in keys}
        return [
            problem
            for problem, key in zip(problems, keys, strict=True)
            if now - self._since[key] >= self.grace
        ]


class ProblemReporter:
    """Posts one Event per new (quota, message) problem and marks the quotas left out, once the
    problem has stood for the ``settling`` grace (none by default)."""

    def __init__(
        self,
        state: ControllerState,
        cluster: Cluster,
        writer: Writer,
        settling: Settling | None = None,
    ) -> None:
        self._settling = settling or Settling()
        self._state = state
        self._cluster = cluster
        self._writer = writer
        self._posted: set[tuple[str, str]] = set()
        #: The standing problems already logged: one whose Event is still to be posted (a post that
        #: failed is tried again at each report) is logged once, not at every report.
        self._logged: set[tuple[str, str]] = set()
        self._outage = OutageLog(logger, "problem Events")

    async def report(self) -> None:
        await rebuild_off_loop(self._state.engine)  # else problems() rebuilds on the loop
        problems = self._settling.standing(self._state.problems())
        await self._mark_invalid(problems)
        current = {(problem.object, problem.message) for problem in problems}
        for ref, message in sorted(current - self._posted):
            if (ref, message) not in self._logged:
                logger.warning("%s: %s", ref, message)
                self._logged.add((ref, message))
            if await self._post(ref, message):
                self._posted.add((ref, message))
        self._posted &= current
        self._logged &= current

    def invalid_writes(self, problems: Iterable[Problem]) -> list[QuotaWrite]:
        """The writes that bring every quota object left out in line with its marker."""
        writes = []
        for (namespace, name), reason in sorted(invalid_quotas(problems).items()):
            quota = self._state.quotas.get((namespace, name))
            if quota is None or self._written_by_a_tree(namespace, name):
                continue
            change = invalid_write(namespace, name, reason, quota.annotations, quota.status)
            if not change.empty:
                writes.append(change)
        return writes

    def _written_by_a_tree(self, namespace: str, name: str) -> bool:
        """A tree loop writes this object's figures: e.g. a broken system or default quota, for
        which the engine uses the reference's defaults. Marking it would undo those writes and
        be undone by them, each pass."""
        tree_id = self._state.engine.tree_of_result(name)
        if tree_id is None:
            return False
        results = self._state.results.get(tree_id)
        if results is None:  # not solved yet: a reserved quota waits for its tree's results
            return name in RESERVED_QUOTAS
        result = results.get(name)
        return result is not None and result.namespace == namespace

    async def _mark_invalid(self, problems: Iterable[Problem]) -> None:
        writes = self.invalid_writes(problems)
        if writes:
            await self._writer.write_all(writes)

    async def _post(self, ref: str, message: str) -> bool:
        kind, _, path = ref.partition(" ")
        namespace, _, name = path.partition("/")
        quota = self._state.quotas.get((namespace, name))
        if kind != "ElasticQuota" or quota is None:
            return True
        try:
            await self._cluster.post_event(quota.involved(), REASON, message)
        except Exception as error:  # posted at the next round
            self._outage.failed(ref, error)
            return False
        self._outage.succeeded()
        return True
