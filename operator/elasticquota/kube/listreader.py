"""The full list of one kind, for a reflector's relist (``kube.reflector``).

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

The objects go to the sink as they are read, in slices between which the event loop runs; the
caller is handed the keys of those it saw and the list's resourceVersion.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from elasticquota.api import Body
from elasticquota.core.generic.timeslice import TimeSlice
from elasticquota.kube.listspool import StreamProgress, read_list
from elasticquota.kube.liststream import ListStream
from elasticquota.kube.readerhttp import HttpStatusError, ReaderHttp, cause
from elasticquota.kube.readerparts import Kind, Sink, VersionExpiredError, object_key

#: The reflector's logger: a list's fallbacks are part of its story (one logger to raise or quiet).
logger = logging.getLogger("elasticquota.kube.reflector")

#: Objects per list page. The API server (before 1.27's paged watch-cache lists) serves each page
#: from etcd, which counts every object left in the range to say how many remain: the cost of a list
#: grows with the square of the object count over the page size. 2,000 pods (about 5 MB) parse in
#: ~15 ms; 100,000 pods were listed in 31 s with pages of 500 and in 17 s with 2,000 (local 1.20).
PAGE_SIZE = 2000
#: How a list read as a stream is asked for: gzipped, a tenth of the bytes to hold.
STREAM_ENCODING = "gzip"
#: Objects handed to the sink between two yields to the event loop.
SLICE = 100


@dataclass(slots=True)
class ListReader:
    """Reads the whole list of ``kind`` into ``sink``."""

    http: ReaderHttp
    kind: Kind
    sink: Sink
    page_size: int = PAGE_SIZE
    request_timeout: float = 30.0
    #: How far the last list read as a stream got, for its failure's log.
    progress: StreamProgress | None = None
    #: Where the last complete list came from: ``cache``, ``pages`` or ``whole`` (the health's).
    source: str = ""

    async def read(
        self, seen: set[tuple[str, str]], from_cache: bool, latest: str | None, quiet: bool
    ) -> str:
        """Every object into the sink and its key into ``seen``: from the watch cache (at least
        as recent as ``latest``) when ``from_cache``, else, or when the cache's answer is not one
        whole list, page by page. The list's resourceVersion. ``quiet``: the reader is in an
        outage (a fallback is logged at DEBUG then: every retry would say it again)."""
        version = await self._list_cached(seen, latest, quiet) if from_cache else None
        if version is None:
            seen.clear()  # what a broken stream handed over is not the list
            version = await self._list_paged(seen)
        return version

    async def _list_cached(
        self, seen: set[tuple[str, str]], latest: str | None, quiet: bool
    ) -> str | None:
        """The list from the API server's watch cache; None when it is to be read from etcd
        instead: the cache's answer was not one whole list, or the cache cannot serve this
        version (410, too large) or refused for good (4xx). A refusal that waiting may lift
        (429, 5xx) and no answer at all are raised: the relist is tried again after a wait, from
        the cache, not moved onto the most expensive read of a server that is refusing work."""
        params = {"resourceVersion": latest or "0"}
        try:
            return await self._list_streamed(params, seen, "cache")
        except asyncio.CancelledError:
            raise
        except HttpStatusError as error:
            if error.transient:
                raise
            self._falling_back(error, quiet)
        except VersionExpiredError as error:
            self._falling_back(error, quiet)
        except Exception as error:
            if self.progress is None:  # no answer at all (no connection, none in time)
                raise
            self._falling_back(error, quiet)
        return None

    def _falling_back(self, error: Exception, quiet: bool) -> None:
        """Say why the list is read in pages: once (at INFO), for while the API server is
        unreachable every retry would say it again."""
        log = logger.debug if quiet else logger.info
        said = cause(error) if self.progress is None else f"{cause(error)}; {self.progress.say()}"
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
        on anything but a complete list; ``progress`` is None if no answer came.

        Asked for gzipped (a tenth of the bytes to hold) and drained at once, so that the server
        is done with it before its ``--request-timeout`` cuts it, however long the parse takes
        (``kube.listspool``)."""
        self.progress = None
        async with asyncio.timeout(self.request_timeout):
            reply = await self.http.open(params, encoding=STREAM_ENCODING)
        self.progress = StreamProgress(asyncio.get_running_loop(), ListStream())
        try:
            version = await read_list(
                reply, self.progress, lambda items: self._feed(items, seen), self.request_timeout
            )
        finally:
            reply.close()
        self.source = source
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
        self.source = "pages"
        return version

    async def _page(self, token: str | None) -> Body | None:
        """The page after ``token`` (the first if None); None if that token expired (410)."""
        try:
            return await self.http.get_json(self._list_params(token), self.request_timeout)
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
        params = {"limit": str(self.page_size)}
        if token:
            params["continue"] = token
        return params

    async def _feed(self, items: list[Body], seen: set[tuple[str, str]]) -> None:
        """Hand a page's objects to the sink, yielding to the loop after ``SLICE`` of them or once
        the stretch has run for its time budget (``TimeSlice``)."""
        stretch = TimeSlice()
        for position, body in enumerate(items, start=1):
            seen.add(object_key(body))
            self.sink.upsert(body)
            if position % SLICE == 0 or stretch.due():
                await asyncio.sleep(0)  # let the loop breathe between slices
                stretch.restart()
        await asyncio.sleep(0)
