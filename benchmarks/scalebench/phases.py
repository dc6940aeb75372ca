"""The phases of ``bench_scale``, in order, each printing its figure line."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

from elasticquota.core.decisions.diff import quota_write
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_VERSION
from scalebench.apirequests import request_counts
from scalebench.harness import ScaleBench
from scalebench.kube import run_pool
from scalebench.operators import CpuWatch, OperatorProcess
from scalebench.options import (
    DEFAULT_LEASE_DURATION,
    LEASE_NAME,
    LEASE_NAMESPACE,
    LOOP_LAG_HISTOGRAM,
    RECONCILE_HISTOGRAM,
    WRITES_DRAIN,
    BenchmarkError,
)
from scalebench.oracle import dump, expected_plan, with_pods
from scalebench.output import ms, parse_histogram, percentile, say
from scalebench.prober import Prober, ProbeSamples
from scalebench.shape import LEAF_MAX, NAMESPACE, pod_plan, quantity


class ScaleRun(ScaleBench):
    """The phases, in order, against one local control plane."""

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
        synced, active and see every quota correct, without writing anything (the CPU seconds of
        the API server, etcd and the operator until then: a figure less tied to the machine's
        pace of the day than the times)."""
        if self.operator is None or self.base is None:
            raise BenchmarkError("the restart needs a started, converged operator")
        started = time.monotonic()
        expected = expected_plan(self.base, f"the cluster before the restart at {pods} pods")
        await self.stop_operator()
        modified_before = self.mirror.modified
        requests_before = await request_counts(self.kube)
        operator = self.start_active(f"restart-{pods}")
        cpu = self.cpu_watch(operator)
        synced = await self.wait_synced(operator, active=True)
        rss_synced = operator.rss_mb()
        correct = await self.converge(expected, f"restart at {pods} pods")
        spent = cpu.fields()
        asked = (await request_counts(self.kube)).since(requests_before)
        await asyncio.sleep(WRITES_DRAIN)
        print(
            f"scale restart pods={pods} quotas={self.options.quotas} "
            f"synced_s={synced - operator.started:.1f} correct_s={correct - operator.started:.1f} "
            f"writes={self.mirror.modified - modified_before} "
            f"peak_rss_mb={operator.peak_rss_mb():.0f} rss_synced_mb={rss_synced:.0f} "
            f"rss_correct_mb={operator.rss_mb():.0f} {spent}",
            flush=True,
        )
        print(f"scale restart-requests {asked.line()}", flush=True)
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
        #: From the last create on: the CPU each process spent converging, read at the match.
        converging: list[CpuWatch] = []
        converge_cpu = [""]

        async def matched() -> None:
            converge_cpu[0] = converging[0].fields("converge_") if converging else ""
            if prober is not None:
                samples.append(await prober.stop())
            await asyncio.sleep(WRITES_DRAIN)  # writes still in flight after convergence count
            writes[0] = self.mirror.modified - modified_before

        try:
            create_s = await run_pool(
                plans, self.kube.create_pod, self.options.concurrency, count, "burst"
            )
            created = time.monotonic()
            converging.append(self.cpu_watch(operator))
            converged = await self.converge(expected, "after the burst", matched)
        finally:
            if prober is not None:
                await asyncio.to_thread(prober.close)
        self.created_burst = count
        print(
            f"scale burst pods={count} create_s={create_s:.1f} "
            f"converge_after_burst_s={converged - created:.1f} writes={writes[0]} "
            f"total_pods={self.created + count} quotas={self.options.quotas} {cpu.fields()} "
            f"{converge_cpu[0]}",
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
        # With --admission the standby serves the webhooks too (registering itself as it starts,
        # as the chart's Service sends the API server to the replica left): the operator's writes
        # go through them.
        admission = self.options.admission
        standby = OperatorProcess(
            "scale-standby", self.cluster.kubeconfig, self.log_dir, self.options, admission
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
