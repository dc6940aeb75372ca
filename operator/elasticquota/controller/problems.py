"""Broken objects reported where users look: a Kubernetes Event on the object itself.

After each reconcile pass, every current problem about an ElasticQuota that exists gets one Warning
Event (reason ``InvalidElasticQuota``) naming the rule; the same message is not posted again while
it stands, and is posted anew if it comes back after being fixed. The quota is left out of its tree
by the engine; every other quota keeps being computed and written.
"""

from __future__ import annotations

import logging

from kubernetes_asyncio import client

from elasticquota.controller.outages import OutageLog
from elasticquota.controller.state import ControllerState
from elasticquota.kube.events import post_event

logger = logging.getLogger(__name__)

REASON = "InvalidElasticQuota"


class ProblemReporter:
    """Posts one Event per new (quota, message) problem."""

    def __init__(self, state: ControllerState, api: client.ApiClient, dry_run: bool) -> None:
        self._state = state
        self._api = api
        self._dry_run = dry_run
        self._posted: set[tuple[str, str]] = set()
        self._outage = OutageLog(logger, "problem Events")

    async def report(self) -> None:
        current = {(problem.object, problem.message) for problem in self._state.problems()}
        for ref, message in sorted(current - self._posted):
            if await self._post(ref, message):
                self._posted.add((ref, message))
        self._posted &= current

    async def _post(self, ref: str, message: str) -> bool:
        kind, _, path = ref.partition(" ")
        namespace, _, name = path.partition("/")
        quota = self._state.quotas.get((namespace, name))
        if kind != "ElasticQuota" or quota is None:
            logger.warning("%s: %s", ref, message)
            return True
        logger.warning("%s: %s", ref, message)
        if self._dry_run:
            return True
        try:
            await post_event(self._api, quota.involved(), REASON, message)
        except Exception as error:  # posted at the next round
            self._outage.failed(ref, error)
            return False
        self._outage.succeeded()
        return True
