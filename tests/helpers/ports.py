"""A loopback TCP port that nothing listens on now: bound to port 0, then closed.

For a server a test is about to start (the webhooks, the metrics endpoint) and for a port that
refuses connections (an unreachable API server). Another process may take it meanwhile: a test
that needs it held binds it itself.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port that nothing listens on (the kernel's choice, released at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
