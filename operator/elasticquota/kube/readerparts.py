"""What a reader (``kube.reflector``) is given and what it reports: the kind it reads, the sink it
fills, and its health, which readiness and the metrics read. Kept apart from the reader itself so
that the controller's memory can hold the health without importing the reader's machinery.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Protocol

from elasticquota.api import Body


class Sink(Protocol):
    """Where a reflector puts what it reads (the controller's memory for one kind)."""

    def upsert(self, body: Body) -> None:
        """An object as it is now (listed, added or modified)."""

    def delete(self, body: Body) -> None:
        """An object that is gone."""

    async def relisted(self, keys: set[tuple[str, str]]) -> None:
        """A complete list returned exactly these (namespace, name): forget every other one
        (awaited, so that a large kind's comparison can yield to the event loop)."""


class VersionExpiredError(Exception):
    """The resourceVersion is too old to resume from (410 Gone): list again."""


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource to read: its collection's path and a name for logs and metrics."""

    name: str
    path: str


@dataclass(slots=True)
class ReaderHealth:
    """What readiness and the metrics know about one reader."""

    listed: asyncio.Event = field(default_factory=asyncio.Event)
    connected: bool = False
    #: Monotonic time since which the reader is not connected (None: connected).
    down_since: float | None = None
    relists: int = 0
    #: Where the latest complete list came from: "cache" (the API server's watch cache, streamed),
    #: "pages" (paged, from etcd) or "whole" (from etcd in one request, streamed: a page's
    #: ``continue`` token expired); "" before the first.
    list_source: str = ""
    events: int = 0
    #: Monotonic time of the latest watch event (0: none yet).
    last_event: float = 0.0
    #: Monotonic time of the latest bytes of the current watch (its start, an event, a bookmark).
    last_seen: float = 0.0
    #: Monotonic time from which the current watch, if still open, is known dead (None: no watch).
    stale_after: float | None = None

    def up(self, now: float, stale_after: float | None = None) -> None:
        """A watch is open (since ``now``); past ``stale_after`` it is known dead if still open."""
        self.connected = True
        self.down_since = None
        self.last_seen = now
        self.stale_after = stale_after

    def down(self, since: float) -> None:
        self.connected = False
        self.stale_after = None
        if self.down_since is None:
            self.down_since = since

    def stalled(self, now: float) -> bool:
        """Connected, but the watch outlived the server's end of it: its connection is dead."""
        return self.connected and self.stale_after is not None and now > self.stale_after

    def blind_since(self, now: float) -> float | None:
        """Since when changes of this kind have not reached memory (None: they do): since the
        watch went down, or since the last bytes of a watch known dead."""
        if self.down_since is not None:
            return self.down_since
        return self.last_seen if self.stalled(now) else None


def object_key(body: Body) -> tuple[str, str]:
    meta = body.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
