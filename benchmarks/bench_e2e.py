"""End-to-end figures of the live operator against a real local kube-apiserver (``make bench-e2e``).

Everything is measured from outside, as a user would see it:

* latency from a pod change (a pending pod created) to its quota's updated ``request`` annotation,
  p50 / p95 over several samples;
* a burst of 5,000 pod creations across 500 leaf quotas: API writes the operator made (counted as
  MODIFIED watch events on the quotas: each annotation or status patch is one), writes per second,
  and the time from the end of the burst until every quota's annotation is correct;
* the operator's peak RSS (VmHWM).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

from elasticquota.core import keys
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.client import make_api_client
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION, list_quotas
from eqdev.cluster import LocalCluster, apply_crds_sync, default_crd_dir

NAMESPACE = "bench"
PARENTS = 10
LEAVES_PER_PARENT = 50
PODS_PER_LEAF = 10
POD_CPU_MILLI = 100
LATENCY_SAMPLES = 30
CREATE_CONCURRENCY = 50
SCRAPES = 10


def quota(name: str, parent: str | None, is_parent: bool) -> dict[str, Any]:
    labels = {keys.LABEL_IS_PARENT: "true"} if is_parent else {}
    if parent:
        labels[keys.LABEL_PARENT] = parent
    size = "500" if is_parent else "10"
    return {
        "apiVersion": f"{QUOTA_GROUP}/{QUOTA_VERSION}",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"min": {"cpu": "1" if not is_parent else "50"}, "max": {"cpu": size}},
    }


def pod(name: str, leaf: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {keys.POD_LABEL_QUOTA: leaf}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "app:1",
                    "resources": {"requests": {"cpu": f"{POD_CPU_MILLI}m", "memory": "64Mi"}},
                }
            ]
        },
    }


def leaves() -> list[str]:
    return [f"leaf-{p:02d}-{c:02d}" for p in range(PARENTS) for c in range(LEAVES_PER_PARENT)]


async def build_tree(api: client.ApiClient) -> None:
    await apply_manifest(
        api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    for index in range(10):
        await apply_manifest(
            api,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"bench-node-{index}"},
                "status": {"allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "1000"}},
            },
        )
    for p in range(PARENTS):
        await apply_manifest(api, quota(f"dept-{p:02d}", None, True))
    for name in leaves():
        await apply_manifest(api, quota(name, f"dept-{name[5:7]}", False))


def request_cpu(quota_body: dict[str, Any]) -> str | None:
    text = (quota_body["metadata"].get("annotations") or {}).get(keys.ANNO_REQUEST)
    return json.loads(text).get("cpu") if text else None


async def wait_request(
    api: client.ApiClient, leaf: str, expected: str, timeout: float = 60
) -> None:
    objects = client.CustomObjectsApi(api)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = await objects.get_namespaced_custom_object(
            QUOTA_GROUP, QUOTA_VERSION, NAMESPACE, QUOTA_PLURAL, leaf
        )
        if request_cpu(body) == expected:
            return
        await asyncio.sleep(0.005)
    raise TimeoutError(f"{leaf} never reached request cpu {expected}")


def cpu_quantity(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


async def measure_latency(api: client.ApiClient) -> list[float]:
    """Create one pending pod at a time; time until its quota's request annotation shows it."""
    core = client.CoreV1Api(api)
    samples = []
    for index in range(LATENCY_SAMPLES):
        leaf = leaves()[index]
        started = time.monotonic()
        await core.create_namespaced_pod(NAMESPACE, pod(f"latency-{index}", leaf))
        await wait_request(api, leaf, cpu_quantity(POD_CPU_MILLI))
        samples.append(time.monotonic() - started)
        await asyncio.sleep(0.3)  # let the tree loop's interval pass: independent samples
    return samples


async def count_writes(api: client.ApiClient, counter: list[int], stop: asyncio.Event) -> None:
    stream = watch.Watch()
    objects = client.CustomObjectsApi(api)
    async with stream.stream(
        objects.list_namespaced_custom_object,
        QUOTA_GROUP, QUOTA_VERSION, NAMESPACE, QUOTA_PLURAL,
        timeout_seconds=600,
    ) as events:  # fmt: skip
        async for event in events:
            if event["type"] == "MODIFIED":
                counter[0] += 1
            if stop.is_set():
                return


async def burst(api: client.ApiClient) -> tuple[float, float, int]:
    """5,000 pods across the 500 leaves as fast as possible; (create s, converge s, writes)."""
    core = client.CoreV1Api(api)
    slots = asyncio.Semaphore(CREATE_CONCURRENCY)
    counter = [0]
    stop = asyncio.Event()
    watcher = asyncio.create_task(count_writes(api, counter, stop))
    await asyncio.sleep(1.0)
    counter[0] = 0

    async def create(index: int, leaf: str) -> None:
        async with slots:
            await core.create_namespaced_pod(NAMESPACE, pod(f"burst-{leaf}-{index}", leaf))

    started = time.monotonic()
    await asyncio.gather(
        *(create(index, leaf) for leaf in leaves() for index in range(PODS_PER_LEAF))
    )
    created = time.monotonic()
    expected = {
        leaf: cpu_quantity(POD_CPU_MILLI * (PODS_PER_LEAF + (i < LATENCY_SAMPLES)))
        for i, leaf in enumerate(leaves())
    }
    while True:
        bodies = {body["metadata"]["name"]: body for body in await list_quotas(api)}
        if all(request_cpu(bodies[leaf]) == cpu for leaf, cpu in expected.items()):
            break
        await asyncio.sleep(0.05)
    converged = time.monotonic()
    await asyncio.sleep(2.0)  # writes still in flight after convergence count too
    stop.set()
    watcher.cancel()
    return created - started, converged - created, counter[0]


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def wait_ready(port: int) -> None:
    import urllib.request

    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as reply:
                if json.loads(reply.read()).get("active"):
                    return
        except OSError:
            pass
        await asyncio.sleep(0.2)
    raise TimeoutError("the operator never became ready and active")


def scrape(port: int) -> tuple[float, str]:
    """One GET of /metrics: (seconds, exposition text)."""
    import urllib.request

    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as reply:
        text: str = reply.read().decode()
    return time.monotonic() - started, text


def sample_value(text: str, name: str) -> float:
    """The sum of a metric's samples named exactly ``name`` (any labels) in an exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def report_metrics(port: int) -> None:
    """/metrics after the burst: scrape time, size and series, and the operator's own timings."""
    runs = [scrape(port) for _ in range(SCRAPES)]
    text = runs[-1][1]
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    scrape_ms = statistics.median(seconds for seconds, _ in runs) * 1000
    solves = sample_value(text, "elastic_quota_solve_seconds_count")
    solve_ms = sample_value(text, "elastic_quota_solve_seconds_sum") / max(solves, 1) * 1000
    passes = sample_value(text, "elastic_quota_reconcile_seconds_count")
    pass_ms = sample_value(text, "elastic_quota_reconcile_seconds_sum") / max(passes, 1) * 1000
    print(
        f"e2e metrics scrape_ms_p50={scrape_ms:.1f} series={series} bytes={len(text)} "
        f"solves={solves:.0f} solve_mean_ms={solve_ms:.2f} passes={passes:.0f} "
        f"pass_mean_ms={pass_ms:.1f}"
    )


async def scenario(operator_pid: int, port: int) -> None:
    api = await make_api_client()
    try:
        await wait_ready(port)
        await build_tree(api)
        await wait_request(api, leaves()[-1], "0", timeout=120)
        samples = await measure_latency(api)
        create_s, converge_s, writes = await burst(api)
    finally:
        await api.close()
    p50 = statistics.median(samples) * 1000
    p95 = statistics.quantiles(samples, n=20)[18] * 1000
    total_pods = PARENTS * LEAVES_PER_PARENT * PODS_PER_LEAF
    quotas = PARENTS * LEAVES_PER_PARENT
    print(f"e2e pod_to_annotation_ms p50={p50:.0f} p95={p95:.0f} samples={len(samples)}")
    print(
        f"e2e burst pods={total_pods} quotas={quotas} create_s={create_s:.1f} "
        f"converge_after_burst_s={converge_s:.1f} writes={writes} "
        f"writes_per_s={writes / (create_s + converge_s):.0f}"
    )
    report_metrics(port)
    print(f"e2e operator peak_rss_mb={peak_rss_mb(operator_pid):.0f}")


def main() -> None:
    print("# operator end to end on a local kube-apiserver (reconcile interval 1 s)")
    with LocalCluster() as cluster:
        apply_crds_sync(cluster.kubeconfig, default_crd_dir())
        os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
        port_file = tempfile.mkstemp(prefix="bench-operator-", suffix=".log")[1]
        from eqdev.cluster.commands import free_ports

        port = free_ports(1)[0]
        with open(port_file, "wb") as log:
            operator = subprocess.Popen(
                [sys.executable, "-m", "elasticquota", "run", "--metrics-port", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            asyncio.run(scenario(operator.pid, port))
        finally:
            operator.terminate()
            operator.wait(timeout=30)


if __name__ == "__main__":
    main()
