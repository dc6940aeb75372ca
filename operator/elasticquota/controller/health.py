"""Liveness and readiness over HTTP: ``/healthz`` and ``/readyz`` (metrics join them later).

Live: the event loop answers. Ready: the initial listing is in memory (a replica that is ready can
take over at once). Both report whether this replica is the active one. ``/statusz`` tells what the
replica knows (objects in memory, trees, dirty trees, problems): the first thing to look at when
annotations lag.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from elasticquota.controller.state import ControllerState


def health_app(state: ControllerState, leading: asyncio.Event) -> web.Application:
    """The probe endpoints."""

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"live": True, "active": leading.is_set()})

    async def readyz(_: web.Request) -> web.Response:
        ready = state.synced.is_set()
        body = {"ready": ready, "active": leading.is_set()}
        return web.json_response(body, status=200 if ready else 503)

    async def statusz(_: web.Request) -> web.Response:
        engine = state.engine
        return web.json_response(
            {
                "active": leading.is_set(),
                "synced": state.synced.is_set(),
                "quotas": len(state.quotas),
                "pods": len(engine.pods),
                "nodes": len(engine.nodes),
                "profiles": len(state.profiles),
                "trees": engine.tree_ids(),
                "dirty_trees": engine.dirty_trees(),
                "problems": len(state.problems()),
            }
        )

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/statusz", statusz)
    return app


async def serve(app: web.Application, port: int) -> web.AppRunner:
    """Start serving on all interfaces; the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host="0.0.0.0", port=port).start()
    return runner
