"""A TCP proxy between the operator and the API server, to break the link in the ways networks do.

``cut()``: every open connection is closed and new ones are refused until ``restore()`` (a
restarted load balancer, an API server that went away). ``freeze()``: the connections open now stop
carrying bytes in both directions without being closed — nobody is told, as when a NAT entry or a
load balancer's flow silently disappears — while new connections pass. ``slow(seconds)``: every
byte, of the open connections and of new ones, arrives that much later (in order), as over a
congested link; ``slow(0)`` ends it. TLS passes through
untouched (the proxy only moves bytes), so the operator verifies the API server's certificate as
usual. A kubeconfig that points at the proxy is written by ``proxied_kubeconfig``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

CHUNK = 65536


@dataclass(eq=False)
class Link:
    """One client connection and its upstream; ``frozen`` links drop every byte."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    frozen: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for writer in (self.client, self.upstream):
            writer.close()


class Proxy:
    """Forwards 127.0.0.1:``port`` to ``target_host:target_port``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._links: set[Link] = set()
        self._server: asyncio.Server | None = None
        self._refusing = False
        self.delay = 0.0
        self.port = 0

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        """Close everything, and wait until the sockets are closed (none outlives the loop)."""
        links = list(self._links)
        self.cut()
        for link in links:
            for writer in (link.client, link.upstream):
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        """Close every connection; refuse new ones until ``restore``."""
        self._refusing = True
        for link in list(self._links):
            link.close()
        self._links.clear()

    def freeze(self) -> int:
        """Silence every open connection (no close on either side); new ones still pass.
        Returns how many were frozen."""
        for link in self._links:
            link.frozen = True
        return len(self._links)

    def restore(self) -> None:
        self._refusing = False

    def slow(self, seconds: float) -> None:
        """Deliver every byte read from now on ``seconds`` later (0: at once again)."""
        self.delay = seconds

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        link = Link(writer, up_writer)
        self._links.add(link)
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: Link
    ) -> None:
        """Read from ``source``; a sender of its own writes each chunk to ``sink`` when it is
        due (``delay`` after it was read), in order."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
        sender = asyncio.create_task(self._send(queue, sink))
        link.tasks.append(sender)
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await source.read(CHUNK):
                if link.frozen:
                    continue  # the bytes vanish, as packets on a dead path do
                queue.put_nowait((loop.time() + self.delay, data))
        queue.put_nowait((loop.time() + self.delay, None))  # the end, once the rest is out
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await sender
        if not link.frozen:
            link.close()
            self._links.discard(link)

    @staticmethod
    async def _send(
        queue: asyncio.Queue[tuple[float, bytes | None]], sink: asyncio.StreamWriter
    ) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            if data is None:
                return
            sink.write(data)
            await sink.drain()


def proxied_kubeconfig(kubeconfig: Path, port: int, into: Path) -> Path:
    """A copy of ``kubeconfig`` whose clusters are reached through the proxy on ``port``."""
    document = yaml.safe_load(kubeconfig.read_text())
    for cluster in document.get("clusters", []):
        server = urlsplit(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{server.scheme}://127.0.0.1:{port}"
    into.write_text(yaml.safe_dump(document))
    return into


def target_of(kubeconfig: Path) -> tuple[str, int]:
    """The API server's host and port in ``kubeconfig`` (its first cluster)."""
    document = yaml.safe_load(kubeconfig.read_text())
    server = urlsplit(document["clusters"][0]["cluster"]["server"])
    return server.hostname or "127.0.0.1", server.port or 443
