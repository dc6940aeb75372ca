"""Cluster-scale figures of the operator on a local kube-apiserver (``make bench-scale``).

Builds a big cluster (by default 1,000 nodes, 10,000 quotas in a tree of depth 4 and 100,000 pods,
see ``scale_cluster``), then measures from outside, one stdout line per figure (progress on
stderr):

* ``scale create``: how long creating the pods through the API server took (``--concurrency``
  requests in flight);
* ``scale start``: with every object already in the API server, from starting the operator to its
  memory being synced and itself active (``/readyz`` 200 with ``active``), and to every quota's
  annotations and ``status.used`` being what ``plan`` computes for the same objects; the
  operator's peak RSS (VmHWM), its writes, and the CPU seconds the API server, etcd and the
  operator spent meanwhile (``*_cpu_s``: on 2 cores, where the time went; the burst line has them
  too). ``--sizes 10000,50000,100000`` repeats it at each pod count in one
  run (the pods are added between the starts);
* ``scale restart``: the operator replaced (SIGTERM, a new process) with nothing changed, as in a
  rolling upgrade: synced and active, every quota correct, and the writes it made (none expected);
* ``scale burst``: the operator running and converged, ``--burst-pods`` more (pending) pods created
  as fast as possible; the time from the last create until every quota is correct again, and the
  operator's writes meanwhile (MODIFIED watch events on the quotas, as ``bench_e2e`` counts them);
* ``scale loop``: the longest event-loop stall during the burst, from the operator's own probe
  (``elastic_quota_event_loop_lag_seconds``: the upper bound of the highest bucket that gained a
  sample), and during the burst the p99 latency of the operator's validating webhook
  for quotas, called directly over HTTPS at a steady rate (a dry-run CREATE AdmissionReview) by a
  separate process, with the latency of ``/healthz`` (answered by the same event loop) beside it;
* ``scale pass``: one reconcile pass after a few pod changes: ``--changed-pods`` pending pods
  created (then deleted) at a time, ``--pass-rounds`` times, p50 / p99 from the operator's
  ``elastic_quota_reconcile_seconds`` histogram (the difference of its buckets over the phase,
  interpolated within buckets as ``histogram_quantile`` does), with the pod change -> annotation
  latency measured from outside beside it;
* ``scale failover``: a second replica on the same Lease, the active one killed with SIGKILL, one
  pod created: the time until the standby has written that change correctly (it includes waiting
  out the Lease, ``lease_duration_s``), and that time counted from the moment the Lease, as the
  killed replica last renewed it, expired (``after_expiry_s``: the standby's own reaction).

Every wait has a limit (``--timeout``); a quota that is not correct in time fails the run with the
first mismatches. The operator runs with its defaults (reconcile interval 1 s, revocation on: the
cluster is sized so that nothing is over-used), with the webhooks served on loopback but not
registered with the API server (``--webhook-configuration ''``: the pods are not sent through it).
The kube-controller-manager is not started (nothing here needs it; it would watch every pod).
The operators share the machine's cores with the API server, etcd and the benchmark;
``--operator-nice -10`` gives them more CPU weight than those (as a pod with CPU of its own on a
node of its own would have), to tell the stalls the others' CPU causes from the operator's own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

import aiohttp

from elasticquota.core.decisions.diff import quota_write
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION
from elasticquota.plan.compute import Plan
from elasticquota.plan.loader import Manifests
from eqdev.cluster import LocalCluster, apply_crds_sync, default_crd_dir
from eqdev.cluster.commands import free_ports
from eqdev.processes import log_tail
from scale_cluster import (
    LEAF_MAX,
    NAMESPACE,
    PRIORITY_CLASSES,
    ClusterShape,
    Kube,
    ObjectKey,
    QuotaMirror,
    build_shape,
    dump,
    expected_plan,
    level_sizes,
    mismatch,
    mismatches,
    node_manifest,
    pod_plan,
    priority_class_manifests,
    quantity,
    quota_manifests,
    run_pool,
    say,
    with_pods,
)

PHASES = ("start", "restart", "burst", "loop", "pass", "failover")
RECONCILE_HISTOGRAM = "elastic_quota_reconcile_seconds"
DEFAULT_LEASE_DURATION = 15.0  # the operator's default (Settings.lease_duration)
LEASE_NAMESPACE = "koordinator-system"  # the operator's defaults: the reserved namespace
LEASE_NAME = "elastic-quota-operator"
FAST_POLL = 0.05
PROBE_TIMEOUT = 5.0
WRITES_DRAIN = 2.0
STOP_TIMEOUT = 30.0
MISMATCHES_SHOWN = 20
#: The event loop's budget (issue 10's target): the operators report every stall above it.
LOOP_BUDGET = 0.1


class BenchmarkError(RuntimeError):
    """The run cannot give its figures: the message says why (mismatches, a dead operator ...)."""


# -- options ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Options:
    pods: int
    quotas: int
    nodes: int
    sizes: list[int]
    burst_pods: int
    concurrency: int
    phases: frozenset[str]
    pass_rounds: int
    changed_pods: int
    webhook_rate: float
    timeout: float
    lease_duration: float | None
    trace_memory: bool = False
    operator_nice: int = 0

    @property
    def webhooks(self) -> bool:
        return "loop" in self.phases


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=100_000, help="pods before the burst")
    parser.add_argument("--quotas", type=int, default=10_000, help="quotas (tree of depth 4)")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument(
        "--sizes",
        default="",
        help="comma-separated pod counts: the start measurement at each (the last one replaces "
        "--pods)",
    )
    parser.add_argument("--burst-pods", type=int, default=50_000)
    parser.add_argument(
        "--concurrency", type=int, default=150, help="API requests in flight while creating"
    )
    parser.add_argument(
        "--phases", default=",".join(PHASES), help=f"which of {','.join(PHASES)} to run"
    )
    parser.add_argument("--pass-rounds", type=int, default=30)
    parser.add_argument("--changed-pods", type=int, default=10, help="pods changed per round")
    parser.add_argument(
        "--webhook-rate", type=float, default=20.0, help="webhook calls per second in the burst"
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="limit of every wait, in seconds"
    )
    parser.add_argument(
        "--lease-duration",
        type=float,
        default=None,
        help="ELASTIC_QUOTA_LEASE_DURATION of the operators (default: theirs, 15 s)",
    )
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="run the operators under tracemalloc (benchmarks/memtrace.py) and print where the "
        "Python memory of each start went once it is correct (the figures of such a run are "
        "not the operator's own)",
    )
    parser.add_argument(
        "--operator-nice",
        type=int,
        default=0,
        help="niceness of the operators against the API server, etcd and this benchmark, which "
        "share the machine's cores with them (a node of its own in a cluster): -10 shows which "
        "stalls are the cores taken by the others (negative values need root)",
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(",") if size.strip())
    phases = frozenset(phase.strip() for phase in args.phases.split(",") if phase.strip())
    if unknown := phases - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    if args.quotas < 4 or args.nodes < 1 or args.pods < 0 or args.changed_pods < 1:
        parser.error("need --quotas >= 4, --nodes >= 1, --pods >= 0 and --changed-pods >= 1")
    return Options(
        pods=sizes[-1] if sizes else args.pods,
        quotas=args.quotas,
        nodes=args.nodes,
        sizes=sizes or [args.pods],
        burst_pods=args.burst_pods,
        concurrency=args.concurrency,
        phases=phases,
        pass_rounds=args.pass_rounds,
        changed_pods=args.changed_pods,
        webhook_rate=args.webhook_rate,
        timeout=args.timeout,
        lease_duration=args.lease_duration,
        trace_memory=args.trace_memory,
        operator_nice=args.operator_nice,
    )


# -- the operator processes ------------------------------------------------------------------------


class OperatorProcess:
    """``python -m elasticquota run`` with its probes (and webhooks) on free loopback ports."""

    def __init__(
        self, identity: str, kubeconfig: Path, log_dir: Path, options: Options, webhooks: bool
    ) -> None:
        self.identity = identity
        self.kubeconfig = kubeconfig
        self.log = log_dir / f"operator-{identity}.log"
        self.lease_duration = options.lease_duration
        self.trace_memory = options.trace_memory
        self.nice = options.operator_nice
        self.metrics_port, self.webhook_port = free_ports(2)
        self.webhooks = webhooks
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def start(self) -> OperatorProcess:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        # Every stall above the loop's 0.1-s budget is reported with its stack (``scale stalls``).
        env["ELASTIC_QUOTA_LOOP_STALL_REPORT_AFTER"] = str(LOOP_BUDGET)
        if self.lease_duration is not None:
            env["ELASTIC_QUOTA_LEASE_DURATION"] = str(self.lease_duration)
        entry = [str(Path(__file__).with_name("memtrace.py"))] if self.trace_memory else []
        if self.trace_memory:
            env["EQ_MEMTRACE_OUT"] = str(self.memory_report_path)
        command = [
            sys.executable, *(entry or ["-m", "elasticquota"]), "run",
            "--metrics-port", str(self.metrics_port),
            "--identity", self.identity,
        ]  # fmt: skip
        if self.webhooks:
            command += [
                "--webhook-port", str(self.webhook_port),
                "--webhook-address", "127.0.0.1",
                "--webhook-configuration", "",
            ]  # fmt: skip
        if self.nice:
            command = ["nice", "-n", str(self.nice), *command]  # execs: the pid is the operator's
        with self.log.open("ab") as sink:
            self.started = time.monotonic()
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        say(f"operator {self.identity} started (pid {self.process.pid}, log {self.log})")
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise BenchmarkError(f"operator {self.identity} was never started")
        return self.process.pid

    def check(self) -> None:
        """Raise when the process has exited (with the end of its log)."""
        if self.process is not None and self.process.poll() is not None:
            raise BenchmarkError(
                f"operator {self.identity} exited with code {self.process.returncode}; "
                f"end of its log:\n{self.tail()}"
            )

    def tail(self, lines: int = 40) -> str:
        return log_tail(self.log, lines)

    def peak_rss_mb(self) -> float:
        return self._status_mb("VmHWM:")

    def rss_mb(self) -> float:
        """The resident memory now (``peak_rss_mb``: the most it ever was)."""
        return self._status_mb("VmRSS:")

    def _status_mb(self, field: str) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        return float("nan")

    @property
    def memory_report_path(self) -> Path:
        return self.log.with_suffix(".memory.txt")

    async def memory_report(self, timeout: float = 300.0) -> str:
        """With ``--trace-memory``: where the operator's Python memory is now (SIGUSR1 to
        ``memtrace.py``, which writes the report)."""
        target = self.memory_report_path
        target.unlink(missing_ok=True)
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while not target.exists():
            if time.monotonic() > deadline:
                raise BenchmarkError(f"no memory report from {self.identity} in {timeout:.0f} s")
            await asyncio.sleep(0.5)
        return target.read_text()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    async def probe(self, session: aiohttp.ClientSession, path: str) -> tuple[int, Any] | None:
        """(HTTP status, JSON body) of a probe endpoint; None when it does not answer."""
        try:
            async with session.get(
                self.url(path), timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
            ) as reply:
                return reply.status, await reply.json(content_type=None)
        except (OSError, TimeoutError, aiohttp.ClientError, ValueError):
            return None

    async def metrics(self, session: aiohttp.ClientSession) -> str:
        async with session.get(self.url("/metrics"), timeout=aiohttp.ClientTimeout(60)) as reply:
            return await reply.text()

    def stop(self) -> None:
        """SIGTERM (the operator releases its Lease), SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL: a crash, the Lease is not released."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# -- the webhook / health prober (a separate process: the benchmark's own work must not delay it) --


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
    out.send(asdict(samples))  # plain data: the class is __mp_main__'s here


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


# -- figures ---------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (NaN for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass(frozen=True, slots=True)
class Histogram:
    """One histogram family of an exposition: cumulative bucket counts by upper bound, sum."""

    buckets: dict[float, float]
    sum: float
    count: float

    def minus(self, earlier: Histogram) -> Histogram:
        return Histogram(
            {le: n - earlier.buckets.get(le, 0.0) for le, n in self.buckets.items()},
            self.sum - earlier.sum,
            self.count - earlier.count,
        )

    def highest_bound(self) -> float:
        """The upper bound of the highest bucket holding a sample (NaN when none)."""
        ordered = sorted(self.buckets.items())
        below = 0.0
        highest = float("nan")
        for le, cumulative in ordered:
            if cumulative > below:
                highest = le
            below = cumulative
        return highest

    def quantile(self, q: float) -> float:
        """As PromQL's ``histogram_quantile``: linear within the bucket holding the rank."""
        ordered = sorted(self.buckets.items())
        if not ordered or ordered[-1][1] <= 0:
            return float("nan")
        rank = q * ordered[-1][1]
        lower, below = 0.0, 0.0
        for le, cumulative in ordered:
            if cumulative >= rank:
                if math.isinf(le):
                    return lower  # beyond the last finite bound: that bound is all we know
                if cumulative == below:
                    return le
                return lower + (le - lower) * (rank - below) / (cumulative - below)
            lower, below = le, cumulative
        return lower


LOOP_LAG_HISTOGRAM = "elastic_quota_event_loop_lag_seconds"


def parse_histogram(text: str, name: str) -> Histogram:
    buckets: dict[float, float] = {}
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            labels, value = line.rsplit(" ", 1)
            le = labels.split('le="', 1)[1].split('"', 1)[0]
            buckets[float(le)] = buckets.get(float(le), 0.0) + float(value)
        elif line.startswith(f"{name}_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith(f"{name}_count"):
            count += float(line.rsplit(" ", 1)[1])
    if not buckets:
        raise BenchmarkError(f"the operator's /metrics has no histogram {name}")
    return Histogram(buckets, total, count)


def ms(seconds: float) -> str:
    return "NA" if math.isnan(seconds) else f"{seconds * 1000:.1f}"


# -- the benchmark ---------------------------------------------------------------------------------


class ScaleBench:
    """The phases, in order, against one local control plane."""

    def __init__(self, cluster: LocalCluster, options: Options, log_dir: Path) -> None:
        self.cluster = cluster
        self.options = options
        self.log_dir = log_dir
        self.shape: ClusterShape = build_shape(options.quotas, options.nodes)
        self.kube = Kube(
            cluster.server, cluster.token, str(cluster.ca_file), max(options.concurrency, 8)
        )
        self.http = aiohttp.ClientSession()  # the operator's probes and /metrics
        self.mirror = QuotaMirror(self.kube)  # the quotas, followed by a watch (``converge``)
        self.operator: OperatorProcess | None = None
        self.standby: OperatorProcess | None = None
        self.created = 0
        self.created_burst = 0
        self.base: Manifests | None = None  # the latest dump, once everything matched its plan
        self.timings: dict[str, float] = {}

    async def close(self) -> None:
        for operator in (self.operator, self.standby):
            if operator is not None:
                await asyncio.to_thread(operator.stop)
        await self.mirror.close()
        await self.kube.close()
        await self.http.close()

    async def stop_operator(self) -> None:
        if self.operator is not None:
            await asyncio.to_thread(self.operator.stop)
            self.operator = None

    def timed(self, phase: str, started: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - started

    # -- building ----------------------------------------------------------------------------------

    async def build(self) -> None:
        started = time.monotonic()
        kube, shape = self.kube, self.shape
        await kube.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        for manifest in priority_class_manifests():
            await kube.create(manifest)
        nodes = [node_manifest(name, index) for index, name in enumerate(shape.nodes)]
        seconds = await run_pool(
            nodes, kube.create, self.options.concurrency, len(nodes), "creating nodes"
        )
        say(f"{len(nodes)} nodes in {seconds:.1f} s")
        quotas = quota_manifests(shape)
        seconds = await run_pool(
            quotas, kube.create, self.options.concurrency, len(quotas), "creating quotas"
        )
        levels = "/".join(str(size) for size in level_sizes(self.options.quotas))
        say(f"{len(quotas)} quotas (levels {levels}) in {seconds:.1f} s")
        self.timed("build nodes+quotas", started)

    async def create_pods(self, total: int) -> None:
        """Pods ``created .. total`` of the main series (bound and pending)."""
        count = total - self.created
        if count <= 0:
            return
        plans = (pod_plan(self.shape, "pod", index) for index in range(self.created, total))
        bound = sum(1 for index in range(self.created, total) if index % 5 < 3)
        requests_before = self.kube.requests
        seconds = await run_pool(
            plans, self.kube.create_pod, self.options.concurrency, count, "creating pods"
        )
        self.created = total
        requests = self.kube.requests - requests_before
        print(
            f"scale create pods={total} created={count} bound={bound} create_s={seconds:.1f} "
            f"pods_per_s={count / seconds:.0f} requests={requests} "
            f"concurrency={self.options.concurrency}",
            flush=True,
        )
        self.timings[f"create {count} pods"] = seconds

    # -- waiting -----------------------------------------------------------------------------------

    def running(self) -> None:
        for operator in (self.operator, self.standby):
            if operator is not None:
                operator.check()

    async def wait_for(
        self,
        condition: Callable[[], Awaitable[bool]],
        what: str,
        timeout: float | None = None,
        poll: float = FAST_POLL,
    ) -> float:
        """Poll until ``condition``; the moment it held. Raises after the timeout."""
        deadline = time.monotonic() + (timeout or self.options.timeout)
        while True:
            self.running()
            if await condition():
                return time.monotonic()
            if time.monotonic() > deadline:
                limit = timeout or self.options.timeout
                raise BenchmarkError(f"{what}: not reached within {limit:.0f} s")
            await asyncio.sleep(poll)

    def start_active(self, name: str) -> OperatorProcess:
        """Start the replica that is to lead (the webhooks served if the options say so)."""
        webhooks = self.options.webhooks
        operator = OperatorProcess(
            name, self.cluster.kubeconfig, self.log_dir, self.options, webhooks=webhooks
        )
        self.operator = operator.start()
        return operator

    async def wait_synced(self, operator: OperatorProcess, active: bool) -> float:
        """Until /readyz answers 200 and the replica is (or is not) the active one."""

        async def synced() -> bool:
            answer = await operator.probe(self.http, "/readyz")
            return answer is not None and answer[0] == 200 and answer[1].get("active") is active

        what = f"operator {operator.identity} synced and {'active' if active else 'standby'}"
        return await self.wait_for(synced, what)

    async def converge(
        self,
        expected: Plan,
        what: str,
        on_match: Callable[[], Awaitable[None]] | None = None,
    ) -> float:
        """Follow the quotas (``QuotaMirror``) until all match ``expected``, then confirm against
        the plan of a fresh dump (following on against that one if they differ). The moment the
        last missing write arrived."""
        deadline = time.monotonic() + self.options.timeout
        mirror = self.mirror
        mirror.take_dirty()
        wrong = self.wrong_quotas(expected, mirror.quotas)
        say(f"{what}: {len(wrong)} of {len(mirror.quotas)} quotas differ from plan at first")
        last_report = matched_at = time.monotonic()
        while True:
            self.running()
            if not wrong and self.own_quotas() >= len(self.shape.quotas):
                if on_match is not None:
                    await on_match()
                    on_match = None
                fresh = await dump(self.kube)
                fresh_plan = expected_plan(fresh, f"a fresh dump ({what})")
                if not mismatches(fresh_plan, fresh.quotas, len(self.shape.quotas)):
                    self.base = fresh
                    return matched_at
                expected = fresh_plan
                wrong = self.wrong_quotas(expected, mirror.quotas)
                say(f"{what}: right for the earlier plan, not for a fresh one: {len(wrong)} differ")
            elif time.monotonic() > deadline:
                shown = "\n  ".join(list(wrong.values())[:MISMATCHES_SHOWN])
                raise BenchmarkError(
                    f"{what}: {len(wrong)} quotas still differ from plan after "
                    f"{self.options.timeout:.0f} s; the first:\n  {shown}"
                )
            elif time.monotonic() - last_report > 10 and wrong:
                example = next(iter(wrong.values()))[:160]
                say(f"{what}: {len(wrong)} quotas differ from plan, e.g. {example}")
                last_report = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(mirror.changed.wait(), timeout=1.0)
            for key in mirror.take_dirty():
                quota = mirror.quotas.get(key)
                problem = None if quota is None else mismatch(expected, quota)
                if problem is None:
                    wrong.pop(key, None)
                else:
                    wrong[key] = problem
            matched_at = time.monotonic()

    @staticmethod
    def wrong_quotas(
        expected: Plan, quotas: Mapping[ObjectKey, Mapping[str, Any]]
    ) -> dict[ObjectKey, str]:
        found = {}
        for key, quota in quotas.items():
            if (problem := mismatch(expected, quota)) is not None:
                found[key] = problem
        return found

    def own_quotas(self) -> int:
        return sum(namespace == NAMESPACE for namespace, _ in self.mirror.quotas)

    # -- phases ------------------------------------------------------------------------------------

    def cpu_watch(self, operator: OperatorProcess) -> CpuWatch:
        """CPU seconds from now on of the API server, etcd and ``operator``."""
        pids = self.cluster.pids
        return CpuWatch({"apiserver": pids["kube-apiserver"], "etcd": pids["etcd"]}, operator)

    async def start(self, pods: int) -> None:
        """Operator start -> synced and active -> every quota correct (peak RSS; the CPU seconds
        of the API server, etcd and the operator meanwhile, and the operator's writes)."""
        await self.stop_operator()
        started = time.monotonic()
        base = await dump(self.kube)
        expected = expected_plan(base, f"the cluster before the start at {pods} pods")
        modified_before = self.mirror.modified
        operator = self.start_active(f"scale-{pods}")
        cpu = self.cpu_watch(operator)
        synced = await self.wait_synced(operator, active=True)
        rss_synced = operator.rss_mb()
        say(f"synced and active after {synced - operator.started:.1f} s")
        correct = await self.converge(expected, f"start at {pods} pods")
        print(
            f"scale start pods={pods} quotas={self.options.quotas} "
            f"synced_s={synced - operator.started:.1f} correct_s={correct - operator.started:.1f} "
            f"peak_rss_mb={operator.peak_rss_mb():.0f} rss_synced_mb={rss_synced:.0f} "
            f"rss_correct_mb={operator.rss_mb():.0f} "
            f"writes={self.mirror.modified - modified_before} {cpu.fields()}",
            flush=True,
        )
        if self.options.trace_memory:
            for line in (await operator.memory_report()).splitlines():
                print(f"scale memory pods={pods} {line}", flush=True)
        self.timed(f"start at {pods} pods", started)

    async def restart(self, pods: int) -> None:
        """A rolling upgrade: the operator replaced while nothing changed. The new one must be
        synced, active and see every quota correct, without writing anything."""
        if self.operator is None or self.base is None:
            raise BenchmarkError("the restart needs a started, converged operator")
        started = time.monotonic()
        expected = expected_plan(self.base, f"the cluster before the restart at {pods} pods")
        await self.stop_operator()
        modified_before = self.mirror.modified
        operator = self.start_active(f"restart-{pods}")
        synced = await self.wait_synced(operator, active=True)
        rss_synced = operator.rss_mb()
        correct = await self.converge(expected, f"restart at {pods} pods")
        await asyncio.sleep(WRITES_DRAIN)
        print(
            f"scale restart pods={pods} quotas={self.options.quotas} "
            f"synced_s={synced - operator.started:.1f} correct_s={correct - operator.started:.1f} "
            f"writes={self.mirror.modified - modified_before} "
            f"peak_rss_mb={operator.peak_rss_mb():.0f} rss_synced_mb={rss_synced:.0f} "
            f"rss_correct_mb={operator.rss_mb():.0f}",
            flush=True,
        )
        self.timed("restart", started)

    def probe_template(self) -> dict[str, Any]:
        """A new leaf under the first team quota, with its siblings' max keys and no min."""
        parent = next(node for node in self.shape.quotas.values() if node.name.startswith("team"))
        return {
            "apiVersion": f"{QUOTA_GROUP}/{QUOTA_VERSION}",
            "kind": "ElasticQuota",
            "metadata": {
                "name": "probe",
                "namespace": NAMESPACE,
                "labels": {"quota.scheduling.koordinator.sh/parent": parent.name},
            },
            "spec": {"min": {}, "max": {k: quantity(k, LEAF_MAX[k]) for k in parent.keys}},
        }

    async def burst(self) -> None:
        """More pods as fast as possible; until every quota is correct again; writes; webhook."""
        operator = self.operator
        if operator is None or self.base is None:
            raise BenchmarkError("the burst needs a started, converged operator")
        started = time.monotonic()
        count = self.options.burst_pods
        plans = [pod_plan(self.shape, "burst", index, pending=True) for index in range(count)]
        expected = expected_plan(
            with_pods(self.base, [plan.manifest for plan in plans]), "the cluster after the burst"
        )
        prober = None
        if "loop" in self.options.phases:
            prober = Prober(operator, self.probe_template(), self.options.webhook_rate)
            await prober.start()
        lag_before = parse_histogram(await operator.metrics(self.http), LOOP_LAG_HISTOGRAM)
        modified_before = self.mirror.modified
        cpu = self.cpu_watch(operator)
        writes = [0]
        samples: list[ProbeSamples] = []

        async def matched() -> None:
            if prober is not None:
                samples.append(await prober.stop())
            await asyncio.sleep(WRITES_DRAIN)  # writes still in flight after convergence count
            writes[0] = self.mirror.modified - modified_before

        try:
            create_s = await run_pool(
                plans, self.kube.create_pod, self.options.concurrency, count, "burst"
            )
            created = time.monotonic()
            converged = await self.converge(expected, "after the burst", matched)
        finally:
            if prober is not None:
                await asyncio.to_thread(prober.close)
        self.created_burst = count
        print(
            f"scale burst pods={count} create_s={create_s:.1f} "
            f"converge_after_burst_s={converged - created:.1f} writes={writes[0]} "
            f"total_pods={self.created + count} quotas={self.options.quotas} {cpu.fields()}",
            flush=True,
        )
        self.timed("burst", started)
        lag = parse_histogram(await operator.metrics(self.http), LOOP_LAG_HISTOGRAM)
        if samples:
            self.report_loop(samples[0], lag.minus(lag_before).highest_bound())

    def report_loop(self, samples: ProbeSamples, max_stall: float) -> None:
        if samples.webhook_errors:
            say(f"webhook errors: {samples.webhook_errors}, the first: {samples.first_error}")
        webhook_p99 = percentile(samples.webhook_ms, 0.99) / 1000
        health_p99 = percentile(samples.health_ms, 0.99) / 1000
        health_max = max(samples.health_ms, default=float("nan")) / 1000
        print(
            f"scale loop max_stall_ms={ms(max_stall)} webhook_p99_ms={ms(webhook_p99)} "
            f"webhook_p50_ms={ms(percentile(samples.webhook_ms, 0.5) / 1000)} "
            f"webhook_calls={len(samples.webhook_ms)} webhook_errors={samples.webhook_errors} "
            f"healthz_p99_ms={ms(health_p99)} healthz_max_ms={ms(health_max)} "
            f"rate_per_s={self.options.webhook_rate:g}",
            flush=True,
        )
        print(
            f"# max_stall_ms: the upper bound of the highest {LOOP_LAG_HISTOGRAM} bucket that "
            "gained a sample during the burst (the operator's own 50-ms probe); healthz_max_ms "
            "is the same seen from outside",
            flush=True,
        )

    async def one_pass(self) -> None:
        """Pod changes a few at a time; the reconcile histogram over the phase; outside latency."""
        operator = self.operator
        if operator is None:
            raise BenchmarkError("the pass phase needs a running operator")
        started = time.monotonic()
        width = self.options.changed_pods
        before = parse_histogram(await operator.metrics(self.http), RECONCILE_HISTOGRAM)
        latencies: list[float] = []
        previous: list[str] = []
        lending = self.shape.lending_leaves()
        for round_ in range(self.options.pass_rounds):
            leaves = [lending[(round_ // 2 * width + i) % len(lending)] for i in range(width)]
            current = {leaf: await self.request_annotation(leaf) for leaf in set(leaves)}
            began = time.monotonic()
            if previous:
                await asyncio.gather(*(self.kube.delete_pod(name) for name in previous))
                previous = []
            else:
                plans = [
                    pod_plan(self.shape, f"pass{round_:03d}", i, pending=True, leaf=leaf)
                    for i, leaf in enumerate(leaves)
                ]
                await asyncio.gather(*(self.kube.create_pod(plan) for plan in plans))
                previous = [plan.name for plan in plans]

            async def changed(current: dict[str, str | None] = current) -> bool:
                texts = await asyncio.gather(*(self.request_annotation(q) for q in current))
                return all(text != current[q] for q, text in zip(current, texts, strict=True))

            done = await self.wait_for(changed, f"pass round {round_}: the request annotations")
            latencies.append(done - began)
            await asyncio.sleep(
                1.0 + 0.2
            )  # the reconcile interval: the next round's writes are due
        after = parse_histogram(await operator.metrics(self.http), RECONCILE_HISTOGRAM)
        window = after.minus(before)
        mean = window.sum / window.count if window.count else float("nan")
        print(
            f"scale pass quotas={self.options.quotas} changed_pods={width} "
            f"p50_ms={ms(window.quantile(0.5))} p99_ms={ms(window.quantile(0.99))} "
            f"mean_ms={ms(mean)} passes={window.count:.0f} "
            f"source={RECONCILE_HISTOGRAM}_buckets "
            f"pod_to_annotation_p50_ms={ms(percentile(latencies, 0.5))} "
            f"pod_to_annotation_p99_ms={ms(percentile(latencies, 0.99))} "
            f"rounds={len(latencies)}",
            flush=True,
        )
        self.timed("pass", started)

    async def request_annotation(self, leaf: str) -> str | None:
        quota = await self.kube.get_quota(leaf)
        annotations = quota["metadata"].get("annotations") or {}
        text = annotations.get("quota.scheduling.koordinator.sh/request")
        return None if text is None else str(text)

    async def lease_expires_in(self) -> float:
        """Seconds from now until the Lease, as its holder last renewed it, expires (the API
        server and this process share the machine's wall clock)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{LEASE_NAME}"
        spec = (await self.kube.call("GET", path))["spec"]
        renewed = datetime.datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00"))
        expiry = renewed.timestamp() + float(spec["leaseDurationSeconds"])
        return expiry - time.time()

    async def failover(self) -> None:
        """A standby takes over after SIGKILL of the active replica and writes a pod change."""
        active = self.operator
        if active is None:
            raise BenchmarkError("the failover phase needs a running operator")
        started = time.monotonic()
        standby = OperatorProcess(
            "scale-standby", self.cluster.kubeconfig, self.log_dir, self.options, webhooks=False
        )
        self.standby = standby.start()
        await self.wait_synced(standby, active=False)
        say(f"standby synced after {time.monotonic() - standby.started:.1f} s")
        base = await dump(self.kube)
        lending = self.shape.lending_leaves()
        leaf = lending[len(lending) // 2]
        pod = pod_plan(self.shape, "failover", 0, pending=True, leaf=leaf)
        expected = expected_plan(with_pods(base, [pod.manifest]), "the cluster after failover")
        watched = [leaf, *self.shape.ancestors(leaf)]

        async def written() -> bool:
            quotas = await asyncio.gather(*(self.kube.get_quota(name) for name in watched))
            for quota in quotas:
                result = expected.snapshot.quotas[quota["metadata"]["name"]]
                meta = quota["metadata"]
                if not quota_write(
                    result, meta.get("annotations") or {}, quota.get("status")
                ).empty:
                    return False
            return True

        if await written():
            raise BenchmarkError("the failover change is already visible before it was made")
        await asyncio.to_thread(active.kill)
        killed = time.monotonic()
        expires_in = await self.lease_expires_in()
        self.operator, self.standby = standby, None
        await self.kube.create_pod(pod)
        done = await self.wait_for(written, "the standby writes the change after the failover")
        takeover = done - killed
        converged = await self.converge(expected, "after the failover")
        lease = self.options.lease_duration or DEFAULT_LEASE_DURATION
        print(
            f"scale failover standby_takeover_s={takeover:.1f} lease_duration_s={lease:g} "
            f"after_expiry_s={takeover - expires_in:.1f} "
            f"all_correct_s={converged - killed:.1f} quotas={self.options.quotas} "
            f"pods={self.created + self.created_burst + 1}",
            flush=True,
        )
        self.timed("failover", started)

    async def run(self) -> None:
        options = self.options
        await self.build()
        await self.mirror.start()
        for size in options.sizes:
            await self.stop_operator()  # the new pods are news to the next operator only
            await self.create_pods(size)
            if "start" in options.phases or size == options.sizes[-1]:
                await self.start(size)
        if "restart" in options.phases:
            await self.restart(options.sizes[-1])
        if "burst" in options.phases or "loop" in options.phases:
            await self.burst()
        if "pass" in options.phases:
            await self.one_pass()
        if "failover" in options.phases:
            await self.failover()


async def scenario(cluster: LocalCluster, options: Options, log_dir: Path) -> dict[str, float]:
    bench = ScaleBench(cluster, options, log_dir)
    try:
        await bench.run()
    except BaseException:
        for operator in (bench.operator, bench.standby):
            if operator is not None:
                say(f"end of operator {operator.identity}'s log:\n{operator.tail()}")
        raise
    finally:
        await bench.close()
    return bench.timings


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class CpuWatch:
    """The CPU seconds of some processes since it was made: where a phase's time went (on 2
    cores, an API server near 2 s per second is the bound, not the operator)."""

    def __init__(self, pids: Mapping[str, int], operator: OperatorProcess) -> None:
        self._pids = {**pids, "operator": operator.pid}
        self._before = {name: cpu_seconds(pid) for name, pid in self._pids.items()}

    def fields(self) -> str:
        return " ".join(
            f"{name}_cpu_s={cpu_seconds(pid) - self._before[name]:.1f}"
            for name, pid in self._pids.items()
        )


STALL_REPORT = re.compile(
    r"the event loop has been held for ([0-9.]+) s"
    r"(?: \(its thread ran ([0-9.]+) s of it, the process's other threads ([0-9.]+) s\))?, in:"
)
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def stall_reports(log: Path) -> list[tuple[str, str]]:
    """The operator's stall watchdog reports in ``log``: how long the loop had been held when
    reported (with the CPU seconds its thread and the process's other threads ran meanwhile:
    ``ran/others``), and the innermost frame of the project's own code in the stack it logged."""
    reports: list[tuple[str, str]] = []
    held: str | None = None
    where = "(no frame of the project's own code)"
    for line in [*log.read_text(errors="replace").splitlines(), "end"]:
        frame = FRAME.search(line)
        if held is not None and frame is not None:
            path, number, function = frame.groups()
            if "/elasticquota/" in path:
                where = f"{path.split('/elasticquota/')[-1]}:{number} {function}"
            continue
        if held is not None and not line.startswith(" "):
            reports.append((held, where))
            held, where = None, "(no frame of the project's own code)"
        if (match := STALL_REPORT.search(line)) is not None:
            length, ran, others = match.groups()
            held = f"{float(length):.2f}s" + (f" ran {ran}/others {others}" if ran else "")
    return reports


def print_stalls(log_dir: Path) -> None:
    """One line per operator: its watchdog's reports (the loop held beyond ``LOOP_BUDGET``; each
    report is when it was noticed, not the stall's whole length, which the loop line bounds)."""
    for log in sorted(log_dir.glob("operator-*.log")):
        reports = stall_reports(log)
        print(
            f"scale stalls operator={log.stem.removeprefix('operator-')} count={len(reports)}"
            f"{''.join(f' | {held} {where}' for held, where in reports)}",
            flush=True,
        )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    print(
        f"# cluster scale on a local kube-apiserver: {options.nodes} nodes, {options.quotas} "
        f"quotas (levels {'/'.join(map(str, level_sizes(options.quotas)))}), pods "
        f"{','.join(map(str, options.sizes))}"
        f"{f' + burst {options.burst_pods}' if {'burst', 'loop'} & options.phases else ''}; "
        f"{len(PRIORITY_CLASSES)} priority classes; operator defaults (reconcile interval 1 s)"
        f"{f'; operators at niceness {options.operator_nice}' if options.operator_nice else ''}",
        flush=True,
    )
    started = time.monotonic()
    try:
        with LocalCluster(controller_manager=False) as cluster:
            apply_crds_sync(cluster.kubeconfig, default_crd_dir())
            timings = asyncio.run(scenario(cluster, options, log_dir))
    except BenchmarkError as error:
        say(f"FAILED: {error}")
        say(f"operator logs: {log_dir}")
        return 1
    print_stalls(log_dir)
    phases = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
    say(f"done in {time.monotonic() - started:.0f} s ({phases}); operator logs: {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
