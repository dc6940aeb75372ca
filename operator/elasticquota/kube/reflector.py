"""List-and-watch of one kind into memory, level-based: client-go's reflector contract, lean.

A :class:`Reflector` lists every object of its kind and hands each to its :class:`Sink`, in slices
between which the event loop runs; when the list is complete the sink is
told which objects exist (``relisted``): every object it holds that the list did not return is
gone, as if deleted. This is what makes memory exactly the cluster after every relist (start-up,
``410 Gone``): a pod deleted while the reader could not see never lingers as a ghost.

A list is read first from the API server's watch cache, as client-go's reflectors do
(``resourceVersion`` set: ``0`` at start-up, else the latest version seen, so that a relist never
goes back in time): the cache answers from memory, where a paged list makes the server read and
decode the whole range from etcd page after page. The cache sends the whole list in one response
(before 1.27 it ignores ``limit``), so that response is parsed as a stream
(:mod:`elasticquota.kube.liststream`), its items handed on as its chunks arrive. The list is read
in pages from etcd instead (``limit`` + ``continue``, each page one small response) when the
cache's answer is not one whole list (a stream cut or stalled, a page, a ``Status``), when the
cache cannot serve the version asked for (``410``; ``504`` "too large resource version", a cache
behind it: a consistent read is needed) or when it refuses the request for good (another 4xx). A
refusal that waiting may lift (``429`` from API Priority and Fairness, a 5xx) and no answer at all
are not moved onto etcd, the most expensive read, on a server already refusing work: the relist is
tried again, from the cache, after a wait. A paged list whose ``continue`` token expired (``410``:
it took longer than etcd's compaction window) is read again in one request, without ``limit`` nor
``resourceVersion``, as client-go's pager does, rather than from its first page again.

Then it watches from the list's resourceVersion: ``ADDED``/``MODIFIED``/``DELETED`` events go to the
sink one by one, ``BOOKMARK`` events only move the resourceVersion on. Every watch is bounded: the
server is asked to end it after ``server_timeout`` seconds (with jitter, so that replicas and kinds
do not reconnect in step) and the client gives it up ``client_margin`` seconds after that, so a
connection that silently stopped carrying traffic blinds the reader for a bounded time only. A
watch that ended, and one that failed (a dropped connection, a cut stream, ``429``, a 5xx), resumes
from the last resourceVersion seen: the server replays every event since that version, deletions
included, so nothing is lost; only ``410 Gone`` (the version left the server's window) relists.
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
from kubernetes_asyncio import client

from elasticquota.api import Body
from elasticquota.core.generic.timeslice import TimeSlice
from elasticquota.kube.backoff import Backoff
from elasticquota.kube.listspool import StreamProgress, read_list
from elasticquota.kube.liststream import ListStream
from elasticquota.kube.readerhttp import HttpStatusError, ReaderHttp, cause
from elasticquota.kube.readerparts import (
    Kind,
    ReaderHealth,
    Sink,
    VersionExpiredError,
    object_key,
)

logger = logging.getLogger(__name__)


#: Objects per list page. The API server (before 1.27's paged watch-cache lists) serves each page
#: from etcd, which counts every object left in the range to say how many remain: the cost of a list
#: grows with the square of the object count over the page size. 2,000 pods (about 5 MB) parse in
#: ~15 ms; 100,000 pods were listed in 31 s with pages of 500 and in 17 s with 2,000 (local 1.20).
PAGE_SIZE = 2000
#: How a list read as a stream is asked for: gzipped, a tenth of the bytes to hold.
STREAM_ENCODING = "gzip"
#: Objects handed to the sink between two yields to the event loop.
SLICE = 100
#: Seconds after the server's end of a watch (``timeoutSeconds``) from which a watch still open is
#: known dead: the server ends it on time, and sends a bookmark two seconds before.
STALL_SLACK = 2.0
#: Seconds within which a watch the server ends without an event counts as failed (client-go's
#: "very short watch"): a server that ends every watch at once would otherwise be a tight loop.
SHORT_WATCH = 1.0

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
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._http = ReaderHttp(api, kind.path)
        self.kind = kind
        self._sink = sink
        self._server_timeout = server_timeout
        self._client_margin = client_margin
        self._request_timeout = request_timeout
        #: How far the last list read as a stream got, for its failure's log.
        self._progress: StreamProgress | None = None
        self._page_size = page_size
        self._list_from_cache = list_from_cache
        self._clock = clock
        self._sleep = sleep
        self._backoff = Backoff()
        self.health = ReaderHealth()
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
        version = await self._list_cached(seen) if self._list_from_cache else None
        if version is None:
            seen.clear()  # what a broken stream handed over is not the list
            version = await self._list_paged(seen)
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

    async def _list_cached(self, seen: set[tuple[str, str]]) -> str | None:
        """The list from the API server's watch cache; None when it is to be read from etcd
        instead: the cache's answer was not one whole list, or the cache cannot serve this
        version (410, too large) or refused for good (4xx). A refusal that waiting may lift
        (429, 5xx) and no answer at all are raised: the relist is tried again after a wait, from
        the cache, not moved onto the most expensive read of a server that is refusing work."""
        params = {"resourceVersion": self._latest or "0"}
        try:
            return await self._list_streamed(params, seen, "cache")
        except asyncio.CancelledError:
            raise
        except HttpStatusError as error:
            if error.transient:
                raise
            self._falling_back(error)
        except VersionExpiredError as error:
            self._falling_back(error)
        except Exception as error:
            if self._progress is None:  # no answer at all (no connection, none in time)
                raise
            self._falling_back(error)
        return None

    def _falling_back(self, error: Exception) -> None:
        """Say why the list is read in pages: once (at INFO), for while the API server is
        unreachable every retry would say it again."""
        log = logger.debug if self._in_outage else logger.info
        said = cause(error) if self._progress is None else f"{cause(error)}; {self._progress.say()}"
        log(
            "%s: list from the API server's cache failed (%s); listing in pages",
            self.kind.name,
            said,
        )

    async def _list_streamed(
        self, params: dict[str, str], seen: set[tuple[str, str]], source: str
    ) -> str:
        """The whole list asked with ``params`` (``source``: what it is, for the health), in one
        answer read as a stream: its bytes drained off the connection as fast as they come (every
        read bounded by the request timeout), parsed behind them (``listspool.read_list``). Raises
        on anything but a complete list; ``_progress`` is None if no answer came.

        Asked for gzipped (a tenth of the bytes to hold) and drained at once, so that the server
        is done with it before its ``--request-timeout`` cuts it, however long the parse takes
        (``kube.listspool``)."""
        self._progress = None
        async with asyncio.timeout(self._request_timeout):
            reply = await self._http.open(params, encoding=STREAM_ENCODING)
        self._progress = StreamProgress(asyncio.get_running_loop(), ListStream())
        try:
            version = await read_list(
                reply, self._progress, lambda items: self._feed(items, seen), self._request_timeout
            )
        finally:
            reply.close()
        self.health.list_source = source
        return version

    async def _list_paged(self, seen: set[tuple[str, str]]) -> str:
        """Every object, page by page (from etcd); read again in one request if a ``continue``
        token expires. The list's version."""
        token: str | None = None
        version = ""
        while True:
            page = await self._page(token)
            if page is None:
                return await self._list_whole(seen)
            await self._feed(page.get("items") or [], seen)
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue") or None
            if token is None:
                break
        self.health.list_source = "pages"
        return version

    async def _page(self, token: str | None) -> Body | None:
        """The page after ``token`` (the first if None); None if that token expired (410)."""
        try:
            return await self._http.get_json(self._list_params(token), self._request_timeout)
        except VersionExpiredError:
            if token is None:
                raise
            return None

    async def _list_whole(self, seen: set[tuple[str, str]]) -> str:
        """Every object in one request from etcd (neither ``limit`` nor ``resourceVersion``): a
        paged list's ``continue`` token expired (410), and starting over from the first page
        would meet the same fate on a list that takes longer than etcd's compaction window."""
        logger.info("%s: a page's continue token expired; listing in one request", self.kind.name)
        seen.clear()  # the pages read so far may hold objects deleted since: the list decides
        return await self._list_streamed({}, seen, "whole")

    def _list_params(self, token: str | None) -> dict[str, str]:
        params = {"limit": str(self._page_size)}
        if token:
            params["continue"] = token
        return params

    async def _feed(self, items: list[Body], seen: set[tuple[str, str]]) -> None:
        """Hand a page's objects to the sink, yielding to the loop after ``SLICE`` of them or once
        the stretch has run for its time budget (``TimeSlice``)."""
        stretch = TimeSlice()
        for position, body in enumerate(items, start=1):
            seen.add(object_key(body))
            self._sink.upsert(body)
            if position % SLICE == 0 or stretch.due():
                await asyncio.sleep(0)  # let the loop breathe between slices
                stretch.restart()
        await asyncio.sleep(0)

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
                    async for line in reply.content:
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
