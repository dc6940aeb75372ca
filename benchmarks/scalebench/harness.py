"""The benchmark's harness: the cluster built, pods created, operators started, and the waits
until they are synced and every quota is what ``plan`` computes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from elasticquota.plan.compute import Plan
from elasticquota.plan.loader import Manifests
from eqdev.cluster import LocalCluster
from scalebench.kube import Kube, run_pool
from scalebench.operators import CpuWatch, OperatorProcess
from scalebench.options import FAST_POLL, MISMATCHES_SHOWN, BenchmarkError, Options
from scalebench.oracle import ObjectKey, QuotaMirror, dump, expected_plan, mismatch, mismatches
from scalebench.output import say
from scalebench.shape import (
    NAMESPACE,
    ClusterShape,
    build_shape,
    level_sizes,
    node_manifest,
    pod_plan,
    priority_class_manifests,
    quota_manifests,
)


class ScaleBench:
    """One local control plane and what every phase needs of it: the cluster built, pods created,
    operators started, and the waits until they are synced and their quotas are right."""

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

    def cpu_watch(self, operator: OperatorProcess) -> CpuWatch:
        """CPU seconds from now on of the API server, etcd and ``operator``."""
        pids = self.cluster.pids
        return CpuWatch({"apiserver": pids["kube-apiserver"], "etcd": pids["etcd"]}, operator)
