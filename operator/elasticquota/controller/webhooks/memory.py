"""What the admission webhooks read: the memory's quotas as a ``QuotaCatalog`` kept current
incrementally, with the quotas admitted a moment ago that the watch has not delivered yet.

Without the recent admissions a child created right after its parent would be refused because the
parent "does not exist" yet (the reference likewise updates its topology on every accepted
admission).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from elasticquota.controller.quotalog import ObjectKey
from elasticquota.controller.state import ControllerState
from elasticquota.core.generic.timeslice import TimeSlice
from elasticquota.core.model.quota import Quota
from elasticquota.core.validation import ClusterView, QuotaCatalog

#: How long an admitted object stands in for what the watch has not delivered yet.
RECENT_TTL = 30.0
#: Quotas indexed between two yields when the catalog is built ahead of the first request.
CATALOG_SLICE = 500


@dataclass(slots=True)
class Admitted:
    body: Mapping[str, Any] | None  # None: deleted
    #: What the memory held for this key when it was last looked at: each change of it is one
    #: event of the watch delivered.
    seen: Quota | None
    deadline: float
    #: The watch events still due before the memory holds this admission: one for it, plus those
    #: of the admissions of the same key before it that were not delivered yet (a quota deleted
    #: and created again waits for both events, not for the deletion's alone).
    due: int = 1

    def caught_up(self, current: Quota | None) -> bool:
        """Count a change of the memory (``current``: what it holds now); True once every
        event due has been seen. Events delivered together count as one: the admission then
        stands, as what the memory holds, until the next change or its deadline."""
        if current is self.seen:
            return False
        self.seen = current
        self.due -= 1
        return self.due <= 0


class RecentAdmissions:
    """Quotas admitted (created, updated, deleted) whose watch event has not arrived yet."""

    def __init__(self, ttl: float = RECENT_TTL, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[ObjectKey, Admitted] = {}

    def remember(
        self, state: ControllerState, key: ObjectKey, body: Mapping[str, Any] | None
    ) -> None:
        current, now = state.quotas.get(key), self._clock()
        earlier = self._entries.get(key)
        due = 1
        if earlier is not None and now <= earlier.deadline and not earlier.caught_up(current):
            due += earlier.due
        self._entries[key] = Admitted(body, current, now + self._ttl, due)

    def overlay(self, state: ControllerState) -> dict[ObjectKey, Mapping[str, Any] | None]:
        """The admissions still ahead of the memory (stale ones are forgotten here)."""
        now = self._clock()
        for key, entry in list(self._entries.items()):
            if now > entry.deadline or entry.caught_up(state.quotas.get(key)):
                del self._entries[key]
        return {key: entry.body for key, entry in self._entries.items()}

    def __len__(self) -> int:
        return len(self._entries)


class QuotaMirror:
    """A ``QuotaCatalog`` that follows the memory (and the recent admissions) incrementally.

    On each request only the quotas the memory changed since the last request
    (``ControllerState.quota_log``) and those an admission stands in for, now or at the
    last request, are looked at; of those, the objects not already held (compared by identity: the
    memory replaces a quota's object on every event) are re-indexed. A request costs what changed,
    not a pass over 10,000 quotas.
    """

    def __init__(
        self,
        state: ControllerState,
        recent: RecentAdmissions,
        catalog: QuotaCatalog | None = None,
    ) -> None:
        """``catalog``: the index to keep current (a new one unless given: a test records it)."""
        self._state = state
        self._recent = recent
        self.catalog = QuotaCatalog() if catalog is None else catalog
        self._held: dict[ObjectKey, object] = {}
        self._sequence = 0
        self._overlaid: set[ObjectKey] = set()
        #: The change log's ``forgotten`` as of this mirror's last sweep (``_drop_forgotten``).
        self._swept = 0

    def refresh(self) -> QuotaCatalog:
        self._drop_forgotten()
        overlay = self._recent.overlay(self._state)
        changed = [key for key, _ in self._state.quota_log.since(self._sequence)]
        self._sequence = self._state.quota_log.sequence
        for key in {*changed, *overlay, *self._overlaid}:
            source = overlay[key] if key in overlay else self._state.quotas.get(key)
            self._hold(key, source)
        self._overlaid = set(overlay)
        return self.catalog

    async def follow(self, size: int = CATALOG_SLICE) -> None:
        """Index what the memory changed since the last request now, oldest first, yielding to
        the event loop after ``size`` quotas or once a stretch has run for its time budget (the
        admissions in flight are applied by the next request). The mirror's place in the change
        log moves with each quota indexed, so a request (``refresh``) or another ``follow`` in
        the meantime takes on only what this one has not reached yet."""
        self._drop_forgotten()
        pending = self._state.quota_log.since(self._sequence)[::-1]
        stretch = TimeSlice()
        for position, (key, sequence) in enumerate(pending, start=1):
            if sequence > self._sequence:
                self._hold(key, self._state.quotas.get(key))
                self._sequence = sequence
            if position % size == 0 or stretch.due():
                await asyncio.sleep(0)
                stretch.restart()
        await asyncio.sleep(0)

    def _drop_forgotten(self) -> None:
        """Deleted quotas the memory's change log dropped (``QuotaChangeLog.forgotten``) before
        this mirror read them: every quota held that the memory no longer holds goes (an
        admission's stands until the next request's overlay decides)."""
        forgotten = self._state.quota_log.forgotten
        if self._sequence < forgotten and self._swept < forgotten:
            quotas, overlaid = self._state.quotas, self._overlaid
            for key in [key for key in self._held if key not in quotas and key not in overlaid]:
                self._hold(key, None)
        self._swept = forgotten

    def _hold(self, key: ObjectKey, source: Quota | Mapping[str, Any] | None) -> None:
        """Index the memory's ``Quota`` as it is (read once, by the reader), or an admitted raw
        object (read by the catalog)."""
        if source is None:
            if self._held.pop(key, None) is not None:
                self.catalog.remove(key)
        elif self._held.get(key) is not source:
            self.catalog.upsert(source)
            self._held[key] = source


def cluster_view(mirror: QuotaMirror, state: ControllerState) -> ClusterView:
    """The quotas and pods as the operator knows them, recent admissions included; the pods
    labelled with a quota from the engine's pod index where it knows them."""
    engine = state.engine
    quotas = mirror.refresh()
    return ClusterView(quotas, engine.pods.values(), engine.name_owner, engine.pods_labelled)
