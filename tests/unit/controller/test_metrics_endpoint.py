"""``/metrics`` on the probes' server: the operator's registry in the Prometheus text format."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.core import Metric

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.observability.health import accepts_gzip, health_app, serve
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import ANNO_USER_LIMITS
from elasticquota.settings import ListenError, Settings, unusable_settings_message

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


async def test_metrics_are_served_next_to_the_probes(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics, k8s: Bodies
) -> None:
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("team", max={"cpu": "2"}))
    state.mark_synced()
    state.results[""] = state.engine.solve_tree("")
    app = health_app(state, leading, metrics)
    async with TestClient(TestServer(app)) as client:
        reply = await client.get("/metrics")
        text = await reply.text()
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert 'elastic_quota_info{version="' in text
        assert "elastic_quota_ready 1.0" in text
        assert (
            'elastic_quota_max{namespace="team",parent="koordinator-root-quota",quota="team",'
            'resource="cpu",tree="",unit="cores"} 2.0'
        ) in text
        assert (await client.get("/readyz")).status == 200


async def test_user_metrics_are_served_from_the_scrape_thread(
    state: ControllerState,
    leading: asyncio.Event,
    metrics: Metrics,
    k8s: Bodies,
    worker: WorkerThreads,
) -> None:
    """The per-user gauges go through the same worker-thread exposition as the others; the quota
    change before the scrape made the topology stale: it is rebuilt off the loop, not by the
    scrape's view on it."""
    epoch = state.engine.topology_epoch
    state.on_node(k8s.node("n1"))
    limits = '[{"users": ["*"], "maxresources": {"cpu": "1"}}]'
    state.on_quota(k8s.quota("team", max={"cpu": "2"}, annotations={ANNO_USER_LIMITS: limits}))
    pod = k8s.pod("p", quota="team", requests={"cpu": "500m"}, node="n1", phase="Running")
    state.on_pod(pod)
    state.mark_synced()
    app = health_app(state, leading, metrics)
    async with TestClient(TestServer(app)) as client:
        text = await (await client.get("/metrics")).text()
    assert state.engine.topology_epoch - epoch == worker.names("compute_rebuild") == 1
    labels = 'quota="team",resource="cpu",tree="",unit="cores",user="nobody"'
    assert f"elastic_quota_user_used{{{labels}}} 0.5" in text
    assert f"elastic_quota_user_limit{{{labels}}} 1.0" in text
    assert 'elastic_quota_user_subjects_folded{kind="user"} 0.0' in text


async def test_openmetrics_when_the_scraper_asks_for_it(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics
) -> None:
    app = health_app(state, leading, metrics)
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


class _ThreadRecorder:
    """A collector that notes which thread collected it."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def collect(self) -> Iterator[Metric]:
        self.threads.append(threading.get_ident())
        return iter(())


async def test_the_exposition_is_encoded_off_the_event_loop(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics, k8s: Bodies
) -> None:
    """At 10,000 quotas encoding takes most of a second: it must not hold the loop; what only
    the loop may read (the topology's problems, readiness) is captured there first."""
    recorder = _ThreadRecorder()
    metrics.served.register(recorder)
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("team", max={"cpu": "2"}))
    state.on_quota(k8s.quota("broken", max={"cpu": "-1"}))
    state.mark_synced()
    leading.set()
    state.results[""] = state.engine.solve_tree("")
    async with TestClient(TestServer(health_app(state, leading, metrics))) as client:
        text = await (await client.get("/metrics")).text()
    assert recorder.threads and threading.get_ident() not in recorder.threads
    assert "elastic_quota_invalid_quotas 1.0" in text
    assert "elastic_quota_leader 1.0" in text
    assert 'quota="team",resource="cpu",tree="",unit="cores"} 2.0' in text


async def test_the_server_listens_on_the_configured_address(
    state: ControllerState, leading: asyncio.Event
) -> None:
    runner = await serve(health_app(state, leading), 0, "127.0.0.1")
    try:
        (host, port), *_ = runner.addresses
        assert host == "127.0.0.1"
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/healthz") as reply,
        ):
            assert reply.status == 200
    finally:
        await runner.cleanup()


async def test_a_taken_port_is_a_listen_error_naming_the_address(
    state: ControllerState, leading: asyncio.Event
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ListenError) as raised:
            await serve(health_app(state, leading), port, "127.0.0.1")
    assert str(raised.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"
    assert raised.value.settings == ("metrics_port", "metrics_address")


def test_a_setting_that_cannot_be_used_is_named_with_where_it_came_from() -> None:
    settings = Settings(identity="t", metrics_port=9000)
    flags = {"metrics_port": "--metrics-port"}
    message = unusable_settings_message(
        ("metrics_port", "metrics_address"), settings, "taken", flags
    )
    assert message == (
        "invalid settings: metrics_port = 9000 (from --metrics-port), "
        "metrics_address = '0.0.0.0': taken"
    )


def test_the_address_is_a_setting_with_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(identity="t").metrics_address == "0.0.0.0"
    monkeypatch.setenv("ELASTIC_QUOTA_METRICS_ADDRESS", "10.0.0.7")
    assert Settings.from_sources().metrics_address == "10.0.0.7"
    assert Settings.from_sources({"metrics_address": "127.0.0.1"}).metrics_address == "127.0.0.1"


async def test_the_exposition_is_gzipped_for_a_scraper_that_takes_it(
    state: ControllerState, leading: asyncio.Event, metrics: Metrics
) -> None:
    """Prometheus asks for gzip: 10,000 quotas' figures are 26.6 MB of text, 1 MB gzipped."""
    async with TestClient(TestServer(health_app(state, leading, metrics))) as client:
        zipped = await client.get("/metrics", headers={"Accept-Encoding": "gzip"})
        plain = await client.get("/metrics", headers={"Accept-Encoding": "identity"})
        assert zipped.headers["Content-Encoding"] == "gzip"
        assert "Content-Encoding" not in plain.headers
        assert "elastic_quota_leader 1.0" in await plain.text()
        assert await zipped.text() == await plain.text()  # the client unzips it


@pytest.mark.parametrize(
    ("header", "gzipped"),
    [
        ("gzip", True),
        ("deflate, gzip;q=0.5", True),
        ("GZIP", True),
        ("*", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0", False),
        ("identity", False),
        ("", False),
        ("br, deflate", False),
    ],
)
def test_what_takes_gzip(header: str, gzipped: bool) -> None:
    assert accepts_gzip(header) is gzipped
