"""A list's bytes drained off the connection as they arrive, ahead of their parse.

The API server (1.20) ends a list at its ``--request-timeout`` (60 s from the request's arrival),
however far the client has read. A list from the watch cache read at the pace of its parse (100,000
pods: 185 MB of JSON) was cut near its end when encoding it and parsing it took longer. So the
reflector (``kube.reflector``) asks for it gzipped and a task of its own moves the compressed bytes
into a ``Spool`` (a queue bounded in bytes) as fast as they come; the parse takes them from there
at its own pace (``read_list``). ``StreamProgress`` says how far a list got, for the log of its
failure.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

import aiohttp

from elasticquota.api import Body
from elasticquota.kube.liststream import Inflater, ListStream, ListStreamError

#: Bytes of a list handed to its parse at a time (expanded, if gzipped).
STREAM_CHUNK = 1 << 18
#: Bytes of a list (as they came, gzipped) held ahead of its parse at most; past it the reading
#: waits. 100,000 pods are ~185 MB of JSON, ~15 MB gzipped.
STREAM_BACKLOG = 64 << 20


class Spool:
    """Bytes handed from the task that reads them to the parse that takes them: a queue bounded
    in bytes (``put`` waits while it holds ``limit``), closed at the end or with an error."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: deque[bytes] = deque()
        self.held = 0
        self._end = False
        self._error: Exception | None = None
        self._changed = asyncio.Event()

    async def put(self, data: bytes) -> None:
        while self.held >= self._limit:
            self._changed.clear()
            await self._changed.wait()
        self._chunks.append(data)
        self.held += len(data)
        self._changed.set()

    def close(self, error: Exception | None = None) -> None:
        self._end, self._error = True, error
        self._changed.set()

    async def take(self) -> bytes | None:
        """The next bytes; None at the end. Raises the error the spool was closed with (at once:
        what was held before it is of no use, the list is incomplete)."""
        while True:
            if self._error is not None:
                raise self._error
            if self._chunks:
                data = self._chunks.popleft()
                self.held -= len(data)
                self._changed.set()
                return data
            if self._end:
                return None
            self._changed.clear()
            await self._changed.wait()


class StreamProgress:
    """How far the parse of a list (``stream``) got, for the log of its failure."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stream: ListStream) -> None:
        self._loop = loop
        self.stream = stream
        self._started = loop.time()
        self.bytes = 0
        self.expanded = 0
        self.drained_after: float | None = None

    def received(self, size: int) -> None:
        self.bytes += size

    def drained(self) -> None:
        self.drained_after = self._loop.time() - self._started

    def say(self) -> str:
        drained = (
            f"all received in {self.drained_after:.1f} s"
            if self.drained_after is not None
            else "still receiving"
        )
        return (
            f"{self.stream.count} items, {self.expanded / 1e6:.1f} MB parsed of"
            f" {self.bytes / 1e6:.1f} MB received ({drained})"
            f" in {self._loop.time() - self._started:.1f} s"
        )


async def drain_into(
    content: aiohttp.StreamReader, spool: Spool, progress: StreamProgress, read_timeout: float
) -> None:
    """Move an answer's bytes into ``spool`` as they arrive (each read bounded by
    ``read_timeout``; waiting while the spool is full), then close it; a failure goes to the
    spool."""
    try:
        while True:
            async with asyncio.timeout(read_timeout):
                data = await content.readany()
            if not data:
                break
            progress.received(len(data))
            await spool.put(data)
        progress.drained()
        spool.close()
    except asyncio.CancelledError:
        raise
    except Exception as error:
        spool.close(error)


async def read_list(
    reply: aiohttp.ClientResponse,
    progress: StreamProgress,
    feed: Callable[[list[Body]], Awaitable[None]],
    read_timeout: float,
) -> str:
    """The resourceVersion of the list ``reply`` carries, its items handed to ``feed`` as their
    bytes come: drained off the connection at once (every read bounded by ``read_timeout``),
    parsed behind them. ListStreamError (or the connection's error) unless it is one whole list.
    However it ends, the stream lets go of its bytes (``progress``, which the reader keeps to say
    how far a failed list got, would otherwise hold a megabyte or more until the next list)."""
    stream = progress.stream
    inflater = Inflater(reply.headers.get("Content-Encoding", ""), STREAM_CHUNK)
    spool = Spool(STREAM_BACKLOG)
    drain = asyncio.create_task(drain_into(reply.content, spool, progress, read_timeout))
    try:
        while (data := await spool.take()) is not None:
            for piece in inflater.pieces(data):
                progress.expanded += len(piece)
                await feed(stream.feed(piece))
        inflater.finish()
        last, document = stream.finish()
    finally:
        drain.cancel()
        stream.release()
    await feed(last)
    return list_version(document)


def list_version(document: Body) -> str:
    """The resourceVersion of a list document read whole (ListStreamError if it is none)."""
    meta = document.get("metadata") or {}
    version = meta.get("resourceVersion")
    if document.get("kind") == "Status" or "items" not in document or not version:
        raise ListStreamError(f"not a list: {str(document)[:300]}")
    if meta.get("continue"):
        raise ListStreamError("the answer was one page, not the whole list")
    return str(version)
