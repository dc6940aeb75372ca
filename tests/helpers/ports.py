"""Loopback TCP ports for servers a test starts (the webhooks, the metrics endpoint) and for a
port that refuses connections (an unreachable API server).

``free_port`` binds port 0 and closes at once: another socket of the machine may take the port
before the server binds it (a server of the same test binding port 0, a connection's own local
port). ``reserved_port`` holds it until the block ends, for a server that binds with
``SO_REUSEPORT`` as Kopf's webhook server does (aiohttp's ``reuse_port=True``): the two sockets
share the port, and no other can take it meanwhile.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def free_port() -> int:
    """A loopback port that nothing listens on (the kernel's choice, released at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextlib.contextmanager
def reserved_port() -> Iterator[int]:
    """A loopback port bound (not listening) with ``SO_REUSEPORT`` until the block ends: only a
    socket that also sets ``SO_REUSEPORT`` (the server the port is for) can bind it meanwhile."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        port: int = holder.getsockname()[1]
        yield port
