"""List-and-watch of one kind into memory, level-based: client-go's reflector contract, lean.

A :class:`Reflector` lists every object of its kind and hands each to its :class:`Sink`, in slices
between which the event loop runs; when the list is complete the sink is
told which objects exist (``relisted``): every object it holds that the list did not return is
gone, as if deleted. This is what makes memory exactly the cluster after every relist (start-up,
``410 Gone``): a pod deleted while the reader could not see never lingers as a ghost.

Lists are read as :mod:`elasticquota.kube.listreader` says: from the API server's watch cache as a
stream, else page by page from etcd.

Then it watches from the list's resourceVersion: ``ADDED``/``MODIFIED``/``DELETED`` events go to the
sink one by one, ``BOOKMARK`` events only move the resourceVersion on. Every watch is bounded: the
server is asked to end it after ``server_timeout`` seconds (with jitter, so that replicas and kinds
do not reconnect in step) and the client gives it up ``client_margin`` seconds after that, so a
connection that silently stopped carrying traffic blinds the reader for a bounded time only. A
watch that ended, and one that failed (a dropped connection, a cut stream, ``429``, a 5xx), resumes
from the last resourceVersion seen: the server replays every event since that version, deletions
included, so nothing is lost; only ``410 Gone`` (the version left the server's window) relists,
and an event longer than ``WATCH_LINE_LIMIT``, which no resumed watch would get past.
A watch the server ends within ``SHORT_WATCH`` without an event counts as failed. Connections are
never reused (a pooled connection may be the silently dead one: ``kube.readerhttp``).

Failures are retried after waits that double (:mod:`elasticquota.kube.backoff`: 1 s up to 10 s,
jittered), started over by a watch that worked; the first ``410`` after a long watch relists at
once, a ``410`` that comes again waits as a failure does. A watch given up at its client-side bound
is resumed at once: that bound was its wait.

The reader keeps its health for readiness and metrics: whether the first list is done, whether
the watch is connected, and since when it is not. A watch whose connection froze still looks
connected to the reader until its client-side bound ends it; but the server ends every watch at its
``timeoutSeconds`` (sending a bookmark just before), so a watch still open ``STALL_SLACK`` seconds
after that is known dead: from then on the health counts it as down since the last bytes it
carried (``ReaderHealth.blind_since``), and so do readiness and the metrics, until the client gives
it up and watches again. Connections have TCP keepalive on (``kube.client.keepalive_socket``).

Logs, for a person reading them during an outage: a lost watch is said once per outage at WARNING
with its kind and cause, its recovery once at INFO with how long the kind was unseen; the retries
in between are not logged.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable

import orjson
from aiohttp.http_exceptions import LineTooLong
from kubernetes_asyncio import client

from elasticquota.kube.backoff import Backoff
from elasticquota.kube.listreader import PAGE_SIZE, ListReader
from elasticquota.kube.readerhttp import ReaderHttp, cause
from elasticquota.kube.readerparts import Kind, ReaderHealth, Sink, VersionExpiredError

logger = logging.getLogger(__name__)


#: Seconds after the server's end of a watch (``timeoutSeconds``) from which a watch still open is
#: known dead: the server ends it on time, and sends a bookmark two seconds before.
STALL_SLACK = 2.0
#: Seconds within which a watch the server ends without an event counts as failed (client-go's
#: "very short watch"): a server that ends every watch at once would otherwise be a tight loop.
SHORT_WATCH = 1.0
#: The longest watch event read (bytes). An event is one object, at most etcd's request limit
#: (1.5 MiB by default; some clusters raise it); aiohttp's own bound (twice the read buffer, 4 MiB)
#: is not a bound on what a cluster may hold. A longer event still is read by a list: the watch
#: could never get past it, resumed from the version before it again and again.
WATCH_LINE_LIMIT = 64 * 2**20

Sleep = Callable[[float], Awaitable[None]]


class ShortWatchError(Exception):
    """The server ended a watch within ``SHORT_WATCH`` without an event."""


class Reflector:
    """Keeps a sink equal to the cluster's objects of one kind. ``clock`` and ``sleep`` are the
    reader's time (monotonic) and its waits between attempts."""

    def __init__(
        self,
        api: client.ApiClient,
        kind: Kind,
        sink: Sink,
        *,
        server_timeout: float = 30.0,
        client_margin: float = 10.0,
        request_timeout: float = 30.0,
        page_size: int = PAGE_SIZE,
        list_from_cache: bool = True,
        watch_line_limit: int = WATCH_LINE_LIMIT,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._http = ReaderHttp(api, kind.path)
        self.kind = kind
        self._sink = sink
        self._server_timeout = server_timeout
        self._client_margin = client_margin
        self.health = ReaderHealth()
        self._lists = ListReader(self._http, kind, sink, page_size, request_timeout)
        self._list_from_cache = list_from_cache
        self._watch_line_limit = watch_line_limit
        self._clock = clock
        self._sleep = sleep
        self._backoff = Backoff()
        #: The resourceVersion to resume from (None: list first).
        self._version: str | None = None
        #: The latest resourceVersion seen: a list from the cache is at least as recent.
        self._latest: str | None = None
        self._in_outage = False

    # -- the loop ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch and resume for ever; relist when resuming is not possible."""
        self.health.down(self._clock())
        try:
            while True:
                await self._cycle()
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the reader's connections (``run`` closes them when it ends)."""
        await self._http.close()

    async def _cycle(self) -> None:
        """One list (when there is no version to resume from) or one watch; then the wait its
        outcome calls for (none after a success)."""
        listing = self._version is None
        try:
            if listing:
                self._version = await self._relist()
            else:
                await self._watch()
            return
        except asyncio.CancelledError:
            raise
        except VersionExpiredError as error:
            delay = self._expired(error)
        except LineTooLong:  # an event no watch gets past: a list reads it, however long
            self._outage(f"a watch event longer than {self._watch_line_limit} bytes; listing")
            self._version = None
            delay = self._backoff.failed()
        except TimeoutError:  # a watch (or a list) that did not end in time: its connection is dead
            self._outage("no answer within the request's bound (a silently dropped connection?)")
            delay = self._backoff.failed() if listing else 0.0  # a watch waited out its bound
        except Exception as error:  # resumed from the same version (or listed again) after a wait
            self._outage(cause(error))
            delay = self._backoff.failed()
        if delay > 0:
            await self._sleep(delay)

    def _expired(self, error: VersionExpiredError) -> float:
        """Relist (410 Gone): at once if routine (the first since a long watch), else after a wait
        and as an outage. The wait."""
        self._version = None
        self.health.stale_after = None  # the watch ended; the list is no stalled watch
        delay = self._backoff.expired()
        if delay > 0:
            self._outage(f"resourceVersion expired again: {error}")
        else:
            logger.info("%s: resourceVersion expired; listing again", self.kind.name)
        return delay

    def _outage(self, cause: str) -> None:
        """Said once per outage (WARNING); its end is said once by ``_connected`` (INFO). The
        outage began when the kind was last seen (a frozen watch: its last bytes)."""
        now = self._clock()
        if not self._in_outage:
            if self.health.listed.is_set():
                logger.warning("%s: watch lost (%s); reconnecting", self.kind.name, cause)
            else:  # nothing was lost: the first list has not come yet
                logger.warning("%s: cannot list (%s); trying again", self.kind.name, cause)
            self._in_outage = True
        self.health.down(self.health.blind_since(now) or now)

    def _connected(self, stale_after: float) -> None:
        now = self._clock()
        if self._in_outage and self.health.down_since is not None:
            logger.info(
                "%s: watching again after %.1f s unseen",
                self.kind.name,
                now - self.health.down_since,
            )
        self._in_outage = False
        self.health.up(now, stale_after)

    # -- lists ------------------------------------------------------------------------------------

    async def _relist(self) -> str:
        """Every object into the sink (from the watch cache, else page by page); then forget the
        others. The version to watch from."""
        seen: set[tuple[str, str]] = set()
        version = await self._lists.read(seen, self._list_from_cache, self._latest, self._in_outage)
        self.health.list_source = self._lists.source
        await self._sink.relisted(seen)
        self._latest = version
        self.health.relists += 1
        self.health.listed.set()
        logger.debug(
            "%s: listed %d at version %s (%s)",
            self.kind.name,
            len(seen),
            version,
            self.health.list_source,
        )
        return version

    # -- watches ----------------------------------------------------------------------------------

    async def _watch(self) -> None:
        """One bounded watch from the last version seen (moved on by every event). However it
        ends, a watch that worked starts the backoff's waits over."""
        timeout = int(self._server_timeout * (1 + random.random() / 5))
        params = {
            "watch": "true",
            "resourceVersion": self._version or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        started, events = self._clock(), self.health.events
        opened = False
        try:
            async with asyncio.timeout(timeout + self._client_margin):
                async with await self._http.open(params) as reply:
                    opened = True
                    self._connected(stale_after=started + timeout + STALL_SLACK)
                    content, limit = reply.content, self._watch_line_limit
                    while line := await content.readuntil(b"\n", max_size=limit):
                        self.health.last_seen = self._clock()
                        self._on_line(line)
                        await asyncio.sleep(0)
        finally:
            if opened:
                lasted = self._clock() - started
                self._backoff.watch_ended(events=self.health.events - events, lasted=lasted)
        self.health.stale_after = None  # ended by the server: no watch open until the next one
        if self.health.events == events and self._clock() - started < SHORT_WATCH:
            raise ShortWatchError("the server ended the watch at once, without an event")

    def _on_line(self, line: bytes) -> None:
        if not line.strip():
            return
        event = orjson.loads(line)
        kind, body = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if body.get("code") == 410:
                raise VersionExpiredError(body.get("message", ""))
            raise RuntimeError(f"watch error: {body.get('message', body)}")
        self.health.events += 1
        self.health.last_event = self._clock()
        if kind == "DELETED":
            self._sink.delete(body)
        elif kind in ("ADDED", "MODIFIED"):
            self._sink.upsert(body)
        self._version = str((body.get("metadata") or {}).get("resourceVersion") or self._version)
        self._latest = self._version
