"""List-and-watch of one kind into memory, level-based: client-go's reflector contract, lean.

A :class:`Reflector` lists every object of its kind and hands each to its :class:`Sink`, in slices
between which the event loop runs; when the list is complete the sink is
told which objects exist (``relisted``): every object it holds that the list did not return is
gone, as if deleted. This is what makes memory exactly the cluster after every relist (start-up,
``410 Gone``, a broken watch): a pod deleted while the watch was down never lingers as a ghost.

A list is read first from the API server's watch cache, as client-go's reflectors do
(``resourceVersion`` set: ``0`` at start-up, else the latest version seen, so that a relist never
goes back in time): the cache answers from memory, where a paged list makes the server read and
decode the whole range from etcd page after page. The cache sends the whole list in one response
(before 1.27 it ignores ``limit``), so that response is parsed as a stream
(:mod:`elasticquota.kube.liststream`), its items handed on as its chunks arrive. Any failure of
that request (an error status, a ``Status`` answer, a stream cut or stalled) falls back to the
paged list from etcd (``limit`` + ``continue``), whose pages are each one small response.

Then it watches from the list's resourceVersion: ``ADDED``/``MODIFIED``/``DELETED`` events go to the
sink one by one, ``BOOKMARK`` events only move the resourceVersion on. Every watch is bounded: the
server is asked to end it after ``server_timeout`` seconds (with jitter, so that replicas and kinds
do not reconnect in step) and the client gives it up ``client_margin`` seconds after that, so a
connection that silently stopped carrying traffic blinds the reader for a bounded time only. An
ended watch resumes from the last resourceVersion seen; ``410 Gone`` or any other failure to resume
relists. Connections are never reused (a pooled connection may be the silently dead one).

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
import ssl
import time
from collections.abc import Callable

import aiohttp
import orjson
from kubernetes_asyncio import client

from elasticquota.api import Body
from elasticquota.core.generic.timeslice import TimeSlice
from elasticquota.kube.client import keepalive_socket
from elasticquota.kube.listspool import Spool, StreamProgress, drain_into
from elasticquota.kube.liststream import Inflater, ListStream, ListStreamError
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
#: Bytes of a list from the watch cache handed to its parse at a time (expanded, if gzipped).
STREAM_CHUNK = 1 << 18
#: Bytes of a list from the watch cache (as they came, gzipped) held ahead of its parse at most;
#: past it the reading waits. 100,000 pods are ~185 MB of JSON, ~15 MB gzipped.
STREAM_BACKLOG = 64 << 20
#: How a list from the watch cache is asked for: gzipped, a tenth of the bytes to hold.
STREAM_ENCODING = "gzip"
#: Seconds given to TLS connections to finish closing when a reader stops.
TLS_CLOSE_GRACE = 0.25
#: Objects handed to the sink between two yields to the event loop.
SLICE = 100
#: Seconds after the server's end of a watch (``timeoutSeconds``) from which a watch still open is
#: known dead: the server ends it on time, and sends a bookmark two seconds before.
STALL_SLACK = 2.0


def ssl_context(configuration: client.Configuration) -> ssl.SSLContext:
    """The TLS settings of a kubeconfig, as the generated client builds them."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Reflector:
    """Keeps a sink equal to the cluster's objects of one kind."""

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
    ) -> None:
        self._api = api
        self.kind = kind
        self._sink = sink
        self._server_timeout = server_timeout
        self._client_margin = client_margin
        self._request_timeout = request_timeout
        #: How far the last list from the cache got (items, bytes, time), for its failure's log.
        self._stream_progress = "nothing received"
        self._page_size = page_size
        self._list_from_cache = list_from_cache
        self._clock = clock
        self.health = ReaderHealth()
        #: The resourceVersion to resume from (None: list first).
        self._version: str | None = None
        #: The latest resourceVersion seen: a list from the cache is at least as recent.
        self._latest: str | None = None
        self._in_outage = False
        self._session: aiohttp.ClientSession | None = None

    # -- the loop ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then watch and resume for ever; relist when resuming is not possible."""
        self.health.down(self._clock())
        try:
            while True:
                await self._cycle()
        finally:
            if self._session is not None:
                session, self._session = self._session, None  # run again, it opens a new one
                await session.close()
                # aiohttp's graceful shutdown: TLS connections finish closing a moment after the
                # session (else their sockets outlive a closed event loop, unclosed).
                await asyncio.sleep(TLS_CLOSE_GRACE)

    async def _cycle(self) -> None:
        """One list (when there is no version to resume from) or one watch, and its outcome."""
        try:
            if self._version is None:
                self._version = await self._relist()
            await self._watch()
        except asyncio.CancelledError:
            raise
        except VersionExpiredError:
            logger.info("%s: resourceVersion expired; listing again", self.kind.name)
            self._version = None
            self.health.stale_after = None  # the watch ended; the list is no stalled watch
        except TimeoutError:  # a watch (or a list) that did not end in time: its connection is dead
            self._outage("no answer within the request's bound (a silently dropped connection?)")
        except Exception as error:
            self._outage(_cause(error))
            self._version = None
            await asyncio.sleep(1.0 + random.random())

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

    async def _relist(self) -> str:
        """Every object into the sink (from the watch cache, else page by page); then forget the
        others. The version to watch from."""
        seen: set[tuple[str, str]] = set()
        version: str | None = None
        if self._list_from_cache:
            try:
                version = await self._list_cached(seen)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # Said once: while the API server is unreachable, every retry would say it again.
                log = logger.debug if self._in_outage else logger.info
                log(
                    "%s: list from the API server's cache failed (%s; %s); listing in pages",
                    self.kind.name,
                    _cause(error),
                    self._stream_progress,
                )
                seen = set()
        if version is None:
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

    async def _list_cached(self, seen: set[tuple[str, str]]) -> str:
        """The whole list from the API server's watch cache: its bytes drained off the connection
        as fast as they come (``listspool.drain_into``, every read bounded by the request
        timeout), parsed as a stream behind them. Raises on anything but a complete list.

        The API server (1.20) ends a list at its ``--request-timeout`` (60 s) from the request's
        arrival, and the ``timeout`` query parameter can only shorten that (1.21+): an answer read
        at the pace of its parse (100,000 pods: 185 MB) is cut when encoding it plus the parse take
        longer. So the answer is asked for gzipped (a tenth of the bytes to hold) and drained at
        once; the server is done with it seconds after it began to send, and the parse may take
        its time."""
        params = {"resourceVersion": self._latest or "0"}
        stream = ListStream()
        session = self._http()
        progress = StreamProgress(asyncio.get_running_loop())
        self._stream_progress = progress.say(stream)
        async with asyncio.timeout(self._request_timeout):
            headers = {**await self._headers(), "Accept-Encoding": STREAM_ENCODING}
            reply = await session.get(
                self._url(), params=params, headers=headers, auto_decompress=False
            )
        try:
            await self._check(reply)
            inflater = Inflater(reply.headers.get("Content-Encoding", ""), STREAM_CHUNK)
            spool = Spool(STREAM_BACKLOG)
            drain = asyncio.create_task(
                drain_into(reply.content, spool, progress, self._request_timeout)
            )
            try:
                while (data := await spool.take()) is not None:
                    for piece in inflater.pieces(data):
                        progress.expanded += len(piece)
                        await self._feed(stream.feed(piece), seen)
                        self._stream_progress = progress.say(stream)
            finally:
                drain.cancel()
                self._stream_progress = progress.say(stream)
            inflater.finish()
            last, document = stream.finish()
        finally:
            reply.close()
        await self._feed(last, seen)
        meta = document.get("metadata") or {}
        version = meta.get("resourceVersion")
        if document.get("kind") == "Status" or "items" not in document or not version:
            raise ListStreamError(f"not a list: {str(document)[:300]}")
        if meta.get("continue"):
            raise ListStreamError("the cache answered one page, not the whole list")
        self.health.list_source = "cache"
        return str(version)

    async def _list_paged(self, seen: set[tuple[str, str]]) -> str:
        """Every object, page by page (from etcd). The list's version."""
        token: str | None = None
        version = ""
        while True:
            page = await self._get_json(self._list_params(token))
            items = page.get("items") or []
            await self._feed(items, seen)
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue") or None
            if token is None:
                break
        self.health.list_source = "pages"
        return version

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

    async def _watch(self) -> None:
        """One bounded watch from the last version seen (moved on by every event)."""
        timeout = int(self._server_timeout * (1 + random.random() / 5))
        params = {
            "watch": "true",
            "resourceVersion": self._version or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        session = self._http()
        started = self._clock()
        async with asyncio.timeout(timeout + self._client_margin):
            headers = await self._headers()
            async with session.get(self._url(), params=params, headers=headers) as reply:
                await self._check(reply)
                self._connected(stale_after=started + timeout + STALL_SLACK)
                async for line in reply.content:
                    self.health.last_seen = self._clock()
                    self._on_line(line)
                    await asyncio.sleep(0)
        self.health.stale_after = None  # ended by the server: no watch open until the next one

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

    # -- HTTP -------------------------------------------------------------------------------------

    def _http(self) -> aiohttp.ClientSession:
        """A session of its own that never reuses a connection."""
        if self._session is None:
            context = ssl_context(self._api.configuration)
            connector = aiohttp.TCPConnector(
                ssl=context, force_close=True, socket_factory=keepalive_socket
            )
            self._session = aiohttp.ClientSession(connector=connector, read_bufsize=2**21)
        return self._session

    def _url(self) -> str:
        return f"{self._api.configuration.host}{self.kind.path}"

    async def _headers(self) -> dict[str, str]:
        """JSON, and the client's credentials (its token refresh included)."""
        headers = {"Accept": "application/json"}
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    async def _get_json(self, params: dict[str, str]) -> Body:
        session = self._http()
        async with asyncio.timeout(self._request_timeout):
            headers = await self._headers()
            async with session.get(self._url(), params=params, headers=headers) as reply:
                await self._check(reply)
                return dict(orjson.loads(await reply.read()))

    async def _check(self, reply: aiohttp.ClientResponse) -> None:
        if reply.status == 410:
            raise VersionExpiredError(await reply.text())
        if reply.status != 200:
            raise RuntimeError(f"HTTP {reply.status}: {(await reply.text())[:300]}")


def _cause(error: Exception) -> str:
    """What broke a watch or a list, in a few words (aiohttp's own messages run long)."""
    if isinstance(error, aiohttp.ClientPayloadError):
        return f"the connection was closed in the middle of the stream: {error.__cause__ or error}"
    if isinstance(error, aiohttp.ClientConnectorError):
        return (
            f"cannot connect to {error.host}:{error.port} ({error.os_error.strerror or 'refused'})"
        )
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    return f"{type(error).__name__}: {error}"
