"""Quota names several quotas share: the owner's name record, written by the active replica.

Quota names are global. When quotas in different namespaces share a name, the engine keeps the
name with its owner (``core.tree.topology.name_order``); what it remembers of who owned a name first
is lost at a restart, and creation times have a one-second resolution. So the owner of a shared name
gets the annotation ``elasticquota.dev/name-owner`` holding its own uid: from then on the name stays
with it across restarts and on every replica, whatever the creation times and uids say. The record
is written once per owner (the object the write returns is kept for the next round, and the engine
sees the record once the watch brings the object to the reader), only
for names that are actually shared, and never by a standby (nor in a dry run, whose ``Cluster``
sends nothing). A record that fails for a transient reason (the API server unreachable) is tried
again at the next round and logged once per outage (``kube.outages``), not once per owner and round.
"""

from __future__ import annotations

import logging

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import ANNO_NAME_OWNER
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)


class NameRecorder:
    """Writes the name record on the owners of shared names that lack it."""

    def __init__(self, state: ControllerState, cluster: Cluster) -> None:
        self._state = state
        self._cluster = cluster
        self._outage = OutageLog(logger, "name owner records")

    async def record(self) -> int:
        """One round; the number of records written."""
        written = 0
        for owner in self._state.engine.unrecorded_owners():
            stored = self._state.quotas.get((owner.namespace, owner.name))
            if stored is None or stored.uid != owner.uid:
                continue  # gone or replaced meanwhile: the next topology decides again
            if stored.annotations.get(ANNO_NAME_OWNER) == owner.uid:
                continue  # written; the engine sees it once the watch brings it in
            patch = {"metadata": {"annotations": {ANNO_NAME_OWNER: owner.uid}}}
            try:
                body = await self._cluster.patch_quota(owner.namespace, owner.name, patch)
            except NotLeadingError:
                return written  # the Lease was lost: every other record would be refused too
            except Exception as error:  # retried at the next round
                self._outage.failed(owner.ref, error)
                continue
            self._outage.succeeded()
            if body is None:  # not sent (a dry run)
                continue
            self._state.keep_written(body, inputs=True)  # the record is an input
            logger.info(
                "%s owns the quota name %r that other quotas share: recorded (%s)",
                owner.ref,
                owner.name,
                ANNO_NAME_OWNER,
            )
            written += 1
        return written
