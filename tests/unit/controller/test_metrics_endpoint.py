"""``/metrics`` on the probes' server: the operator's registry in the Prometheus text format."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp.test_utils import TestClient, TestServer

from elasticquota.controller.health import health_app
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState

if TYPE_CHECKING:
    from conftest import Bodies


async def test_metrics_are_served_next_to_the_probes(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics, k8s: Bodies
) -> None:
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("team", max={"cpu": "2"}))
    state.mark_synced()
    state.results[""] = state.engine.solve_tree("")
    app = health_app(state, leading, metrics.registry)
    async with TestClient(TestServer(app)) as client:
        reply = await client.get("/metrics")
        text = await reply.text()
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert 'elastic_quota_info{version="' in text
        assert "elastic_quota_ready 1.0" in text
        assert (
            'elastic_quota_max{namespace="team",parent="koordinator-root-quota",quota="team",'
            'resource="cpu",tree=""} 2.0'
        ) in text
        assert (await client.get("/readyz")).status == 200


async def test_openmetrics_when_the_scraper_asks_for_it(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics
) -> None:
    app = health_app(state, leading, metrics.registry)
    async with TestClient(TestServer(app)) as client:
        reply = await client.get(
            "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
        )
        assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
        assert (await reply.text()).endswith("# EOF\n")


async def test_no_metrics_without_a_registry(
    state: ControllerState, leading: asyncio.Event
) -> None:
    async with TestClient(TestServer(health_app(state, leading))) as client:
        assert (await client.get("/metrics")).status == 404
        assert (await client.get("/healthz")).status == 200
