"""The replica's HTTP server (``metrics-port``): probes, status and Prometheus metrics.

Live (``/healthz``): the event loop answers (never an API outage: no restart storms). Ready
(``/readyz``): the initial listing is in memory and every reader's watch is connected, or has been
down for less than ``grace`` seconds (a reconnect that heals at once does not flap readiness; an
API server that stays unreachable, or a watch that could not be resumed, does): a ready replica
can make correct decisions now and take over at once. Both report whether this replica is the
active one; ``/readyz`` names the kinds it is blind to. ``/statusz`` tells what the replica knows
(objects in memory, trees, dirty trees, problems, the readers' state): the first thing to look at
when annotations lag. ``/metrics`` is the Prometheus exposition of the
operator's registry (``controller.metrics``; OpenMetrics when the scraper asks for it), encoded in
a worker thread from a view captured on the event loop: at 10,000 quotas the encoding alone would
hold the loop for most of a second.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Awaitable, Callable

from aiohttp import web

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.collectors import SCRAPE_VIEW, capture_view
from elasticquota.controller.solving import rebuild_off_loop
from elasticquota.controller.state import READY_GRACE, ControllerState
from elasticquota.settings import ListenError, is_bind_error


def metrics_handler(
    metrics: Metrics, state: ControllerState, leading: asyncio.Event
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """``/metrics``: the registry in the text format the scraper accepts, encoded off the loop."""

    async def handle(request: web.Request) -> web.StreamResponse:
        accept = request.headers.get("Accept", "")
        gzipped = accepts_gzip(request.headers.get("Accept-Encoding", ""))
        await rebuild_off_loop(state.engine)  # the view reads the user limits' topology
        SCRAPE_VIEW.set(capture_view(state, leading))  # to_thread runs in a copy of this context
        chunks, headers = await asyncio.to_thread(_encoded, metrics, accept, gzipped)
        response = web.StreamResponse(headers=headers)
        response.content_length = sum(len(chunk) for chunk in chunks)
        await response.prepare(request)
        for chunk in chunks:  # a copy into the socket's buffer each, none of the whole body
            await response.write(chunk)
        await response.write_eof()
        return response

    return handle


def _encoded(metrics: Metrics, accept: str, gzipped: bool) -> tuple[list[bytes], dict[str, str]]:
    """The exposition in chunks and its headers, gzipped when the scraper takes it (as Prometheus
    does): 10,000 quotas' figures are 26.6 MB of text, 1 MB gzipped, and the event loop's thread
    copies the body into the socket. zlib lets go of the interpreter while it compresses."""
    chunks, content_type = metrics.exposition(accept)
    if not gzipped:
        return chunks, {"Content-Type": content_type}
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, GZIP_WBITS)
    zipped = [compressor.compress(chunk) for chunk in chunks]
    zipped.append(compressor.flush())
    return zipped, {"Content-Type": content_type, "Content-Encoding": "gzip"}


#: zlib's window with a gzip header and trailer (16 + the largest window, 2**15).
GZIP_WBITS = 16 + zlib.MAX_WBITS
#: zlib's fastest level: 26.6 MB of exposition in under a tenth of a second.
GZIP_LEVEL = 1


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip (``gzip`` or ``*``, not at ``q=0``)."""
    for item in accept_encoding.split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            quality = params.strip().removeprefix("q=").strip() if params else "1"
            try:
                return float(quality or "1") > 0
            except ValueError:
                return False
    return False


def health_app(
    state: ControllerState,
    leading: asyncio.Event,
    metrics: Metrics | None = None,
    grace: float = READY_GRACE,
) -> web.Application:
    """The probe endpoints, and ``/metrics`` when given the operator's metrics."""

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"live": True, "active": leading.is_set()})

    async def readyz(_: web.Request) -> web.Response:
        blind = state.blind(time.monotonic(), grace)
        ready = state.ready(time.monotonic(), grace)
        body = {"ready": ready, "active": leading.is_set(), "blind": blind}
        return web.json_response(body, status=200 if ready else 503)

    async def statusz(_: web.Request) -> web.Response:
        engine = state.engine
        await rebuild_off_loop(engine)  # else the trees and problems below rebuild on the loop
        now = time.monotonic()
        body: dict[str, object] = {
            "active": leading.is_set(),
            "synced": state.synced.is_set(),
            "quotas": len(state.quotas),
            "pods": len(engine.pods),
            "nodes": len(engine.nodes),
            "profiles": len(state.profiles),
            "topology_stale": engine.topology_stale,
            "readers": {
                kind: {
                    "listed": health.listed.is_set(),
                    "connected": health.connected and not health.stalled(now),
                    "relists": health.relists,
                    "events": health.events,
                }
                for kind, health in sorted(state.readers.items())
            },
        }
        if not engine.topology_stale:  # quotas still changing: no trees until they settle
            body |= {
                "trees": engine.tree_ids(),
                "dirty_trees": engine.dirty_trees(),
                "problems": len(state.problems()),
            }
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/statusz", statusz)
    if metrics is not None:
        app.router.add_get("/metrics", metrics_handler(metrics, state, leading))
    return app


#: The settings of this server's listening socket, named when it cannot listen.
LISTEN_SETTINGS = ("metrics_port", "metrics_address")


async def serve(app: web.Application, port: int, host: str = "0.0.0.0") -> web.AppRunner:
    """Start serving on ``host`` (all interfaces by default); the caller cleans the runner up.
    Raises ``ListenError`` when the address cannot be bound."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host=host, port=port).start()
    except OSError as error:
        await runner.cleanup()
        if is_bind_error(error):
            raise ListenError(LISTEN_SETTINGS, host, port, error) from error
        raise
    return runner
