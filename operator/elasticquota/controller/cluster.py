"""The cluster as the controller writes to it: one port, passed in at construction.

Every write the controller's loops make goes through a ``Cluster``: the quota writer, the name
records, the problem Events, the profile controller, the reserved quotas, revocation, admission
gating and in-quota preemption. Which implementation they get is chosen once, by the runner, from
the settings:

- ``kube.cluster.KubeCluster``: the API server, through the writers' API client (fenced by the
  Lease, every request bounded in time; ``kube.client``);
- ``DryRunCluster`` (``--dry-run``): nothing is sent; each distinct write it would have sent is
  logged once (``dry-run: would ...``) and kept in a bounded record;
- the tests' in-memory fake, which records the calls and can be told to fail them.

A write answers with what came back: the object as the server now has it, or None when nothing
was sent (a dry run), so a loop keeps in memory only what the cluster holds. Reads (the
list-and-watch readers, the Lease) do not go through the port.
"""

from __future__ import annotations

import collections
import logging
from typing import Any, Protocol

from elasticquota.api import Body
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.kube.quotafigures import Changes, figures_patch

logger = logging.getLogger(__name__)


#: Calls a dry run keeps, and distinct would-be writes it remembers having logged.
DRY_RUN_MEMORY = 4096


class Cluster(Protocol):
    """Every write the controller makes to the cluster."""

    async def patch_quota(self, namespace: str, name: str, patch: Body) -> Body | None:
        """Merge-patch an ElasticQuota (metadata and spec): the object after the write."""

    async def write_quota(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> Body | None:
        """Write an ElasticQuota's computed figures: its ``annotations`` and its ``status.used``
        (None: unchanged), the way its CRD takes them (``kube.quotafigures``); the object after
        the write."""

    async def create_quota(self, body: Body) -> Body | None:
        """Create an ElasticQuota: the created object; None when it exists already."""

    async def patch_profile(self, namespace: str, name: str, patch: Body) -> Body | None:
        """Merge-patch an ElasticQuotaProfile: the object after the write."""

    async def ensure_namespace(self, name: str) -> None:
        """Create the namespace unless it exists."""

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        """Post an Event about ``involved`` (a repeat counts on the Event already posted)."""

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        """Evict a pod through the Eviction API (PodDisruptionBudgets are honoured); with the
        creation time of the pod decided about (``PodInfo.created``), only that pod: another one
        recreated under the name since is GONE, not evicted. The outcome comes with the uid of
        the pod read (``""``: not read), for the Events about it; so does a failed request,
        raised as ``EvictionError`` from its cause (a write the fence refused, as it is)."""

    async def set_scheduling_gates(
        self, namespace: str, name: str, gates: list[str], created: str = ""
    ) -> bool:
        """Replace a pod's scheduling gates, with ``created`` only the gates of that pod; False
        when they were not changed: nothing was sent (a dry run), or the pod is gone or another
        pod has its name."""

    async def set_waiting_condition(
        self, namespace: str, name: str, waiting: bool, message: str, created: str = ""
    ) -> str | None:
        """The pod condition that says whether (and why) the pod waits for its quota, with
        ``created`` only on that pod: the uid of the pod written (``""``: not known), None when
        the pod is gone or another pod has its name (nothing written). A dry run, which writes
        nothing and knows no pod, answers ``""``: the round goes on as it would (its Event is
        logged too)."""


class DryRunCluster:
    """A cluster that is never written: each distinct write is logged once and recorded."""

    def __init__(self) -> None:
        #: The most recent calls: (verb, namespace, name, body) (bounded).
        self.calls: collections.deque[tuple[str, str, str, Any]] = collections.deque(
            maxlen=DRY_RUN_MEMORY
        )
        self._said: collections.OrderedDict[str, None] = collections.OrderedDict()

    def _would(self, verb: str, namespace: str, name: str, body: Any, what: str) -> None:
        self.calls.append((verb, namespace, name, body))
        if what in self._said:
            self._said.move_to_end(what)
            return
        self._said[what] = None
        if len(self._said) > DRY_RUN_MEMORY:
            self._said.popitem(last=False)
        logger.info("dry-run: would %s", what)

    async def patch_quota(self, namespace: str, name: str, patch: Body) -> Body | None:
        self._would("patch_quota", namespace, name, patch, f"write {namespace}/{name}: {patch}")
        return None

    async def write_quota(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> Body | None:
        patch = figures_patch(annotations, used)
        self._would("write_quota", namespace, name, patch, f"write {namespace}/{name}: {patch}")
        return None

    async def create_quota(self, body: Body) -> Body | None:
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        what = f"create ElasticQuota {namespace}/{name} if missing"
        self._would("create_quota", namespace, name, body, what)
        return None

    async def patch_profile(self, namespace: str, name: str, patch: Body) -> Body | None:
        what = f"write ElasticQuotaProfile {namespace}/{name}: {patch}"
        self._would("patch_profile", namespace, name, patch, what)
        return None

    async def ensure_namespace(self, name: str) -> None:
        self._would("ensure_namespace", "", name, None, f"create namespace {name} if missing")

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        namespace, name = involved.get("namespace", ""), involved.get("name", "")
        what = f"post {event_type} Event {reason} on {involved.get('kind')} {namespace}/{name}"
        self._would("post_event", namespace, name, message, f"{what}: {message}")

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        self._would("evict", namespace, name, None, f"evict Pod {namespace}/{name}")
        return EvictionResult(EvictionOutcome.NOT_SENT)

    async def set_scheduling_gates(
        self, namespace: str, name: str, gates: list[str], created: str = ""
    ) -> bool:
        what = f"set the scheduling gates of Pod {namespace}/{name} to {gates}"
        self._would("set_scheduling_gates", namespace, name, gates, what)
        return False

    async def set_waiting_condition(
        self, namespace: str, name: str, waiting: bool, message: str, created: str = ""
    ) -> str | None:
        state = "waiting" if waiting else "admitted"
        what = f"mark Pod {namespace}/{name} {state}: {message}"
        self._would("set_waiting_condition", namespace, name, message, what)
        return ""
