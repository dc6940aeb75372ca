"""The webhook and ``/healthz`` prober: a separate process (the benchmark's own work must not
delay it) that calls both at a steady rate and reports the latencies."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
import uuid
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from typing import Any

import aiohttp

from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION
from scalebench.operators import OperatorProcess
from scalebench.options import BenchmarkError
from scalebench.shape import NAMESPACE


@dataclass(slots=True)
class ProbeSamples:
    webhook_ms: list[float] = field(default_factory=list)
    webhook_errors: int = 0
    health_ms: list[float] = field(default_factory=list)
    health_errors: int = 0
    first_error: str = ""


def review(template: dict[str, Any], index: int) -> dict[str, Any]:
    """A dry-run CREATE AdmissionReview for a new leaf quota (the API server's request shape)."""
    quota = json.loads(json.dumps(template))
    name = f"probe-{index:06d}"
    quota["metadata"]["name"] = name
    resource = {"group": QUOTA_GROUP, "version": QUOTA_VERSION, "resource": QUOTA_PLURAL}
    kind = {"group": QUOTA_GROUP, "version": QUOTA_VERSION, "kind": "ElasticQuota"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": name,
            "namespace": NAMESPACE,
            "operation": "CREATE",
            "userInfo": {"username": "bench-scale", "groups": ["system:authenticated"]},
            "object": quota,
            "oldObject": None,
            "dryRun": True,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


async def _timed(
    session: aiohttp.ClientSession, method: str, url: str, body: Any, samples: list[float]
) -> str | None:
    """One request; its latency appended to ``samples``, or the error returned."""
    started = time.monotonic()
    try:
        async with session.request(
            method, url, json=body, timeout=aiohttp.ClientTimeout(total=30)
        ) as reply:
            text = await reply.text()
            if reply.status != 200:
                return f"HTTP {reply.status}: {text[:200]}"
            if body is not None and "response" not in json.loads(text):
                return f"not an AdmissionReview: {text[:200]}"
    except (OSError, TimeoutError, aiohttp.ClientError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    samples.append((time.monotonic() - started) * 1000)
    return None


async def _probe(
    webhook_url: str, health_url: str, template: dict[str, Any], rate: float, stop: EventType
) -> ProbeSamples:
    samples = ProbeSamples()
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    connector = aiohttp.TCPConnector(ssl=False, limit=100)  # the webhook's self-signed cert
    async with aiohttp.ClientSession(connector=connector) as session:

        async def once(index: int) -> None:
            error = await _timed(
                session, "POST", webhook_url, review(template, index), samples.webhook_ms
            )
            if error:
                samples.webhook_errors += 1
                samples.first_error = samples.first_error or error
            if await _timed(session, "GET", health_url, None, samples.health_ms):
                samples.health_errors += 1

        next_at, index = loop.time(), 0
        while not stop.is_set():
            task = asyncio.create_task(once(index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            index += 1
            next_at += 1 / rate
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        if tasks:
            await asyncio.wait(tasks, timeout=30)
    return samples


def probe_main(
    webhook_url: str,
    health_url: str,
    template: dict[str, Any],
    rate: float,
    stop: EventType,
    out: Connection,
) -> None:
    """The prober process: steady calls until ``stop``, then the samples through ``out``."""
    out.send("started")
    samples = asyncio.run(_probe(webhook_url, health_url, template, rate, stop))
    out.send(asdict(samples))  # plain data over the pipe


class Prober:
    """Runs ``probe_main`` in a spawned process for the duration of a phase."""

    def __init__(self, operator: OperatorProcess, template: dict[str, Any], rate: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._receive, send = context.Pipe(duplex=False)
        webhook_url = f"https://127.0.0.1:{operator.webhook_port}/validate-elasticquota"
        self._process = context.Process(
            target=probe_main,
            args=(webhook_url, operator.url("/healthz"), template, rate, self._stop, send),
            daemon=True,
        )

    async def start(self) -> None:
        self._process.start()
        if not await asyncio.to_thread(self._receive.poll, 60):
            raise BenchmarkError("the webhook prober process did not start")
        self._receive.recv()

    async def stop(self) -> ProbeSamples:
        self._stop.set()
        try:
            if not await asyncio.to_thread(self._receive.poll, 60):
                raise BenchmarkError("the webhook prober process did not report")
            return ProbeSamples(**self._receive.recv())
        finally:
            self.close()

    def close(self) -> None:
        """Stop the process whatever state it is in (idempotent)."""
        self._stop.set()
        if self._process.pid is not None:
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
