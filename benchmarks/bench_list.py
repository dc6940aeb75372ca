"""How the reflector's initial list should be read: paged from etcd, or from the watch cache.

Starts the local control plane, creates ``--pods`` pods (the shape of ``bench_scale``, made by
``scalebench.kube.Kube``), then lists them all, alternating the variants, ``--rounds`` times each:

* ``paged``: the reflector's paged list (``limit`` = its page size, ``continue``), which the API
  server (1.20) serves from etcd, page after page;
* ``cache-whole``: one ``resourceVersion=0`` list (the API server's watch cache), read and parsed
  as one JSON document (gzipped, as aiohttp asks by default, like the paged list);
* ``cache-stream``: the same answer, uncompressed, parsed as a stream, item by item
  (``elasticquota.kube.liststream``, the reflector's ``list_from_cache``);
* ``cache-ijson``: the same with ``ijson`` (only when it can be imported, e.g. from
  ``--ijson-path``: it is not a dependency of the project).

Every variant feeds the same sink work as the operator (``parse_pod``, the records kept), through
the reflector's slices that yield to the event loop, and runs in a process of its own, so that its
peak RSS is its own. One line per variant: the median seconds to the end of the list, the API
server's and etcd's CPU seconds during it (``/proc/<pid>/stat``), the growth of the client's
peak RSS over its RSS before the list, and for ``cache-stream`` how many of its rounds fell back to
the pages (the API server ends a list at its ``--request-timeout``, 60 s after the request
arrived). ``--chunk-delay`` adds a pause after each chunk of the stream's parse: a consumer slower
than the benchmark's (the operator's parse on a busy machine). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from kubernetes_asyncio import client, config

from elasticquota.api.parse import parse_pod
from elasticquota.kube.readerhttp import check
from elasticquota.kube.readerparts import Kind, object_key
from elasticquota.kube.reflector import Reflector
from eqdev.cluster import LocalCluster
from scalebench.kube import Kube, run_pool
from scalebench.operators import cpu_seconds
from scalebench.output import say
from scalebench.shape import NAMESPACE, build_shape, pod_plan, priority_class_manifests

VARIANTS = ("paged", "cache-whole", "cache-stream", "cache-ijson")
PODS = Kind("pods", "/api/v1/pods")
SLICE = 100


# -- one measurement, in a process of its own ------------------------------------------------------


class ParsedSink:
    """The operator's work per pod: parse it and keep the record (the sink of the pod reader)."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], Any] = {}

    def upsert(self, body: dict[str, Any]) -> None:
        self.pods[object_key(body)] = parse_pod(body)[0]

    def delete(self, body: dict[str, Any]) -> None:
        self.pods.pop(object_key(body), None)

    async def relisted(self, keys: set[tuple[str, str]]) -> None:
        for key in set(self.pods) - keys:
            del self.pods[key]


def memory_kb(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


async def whole(reader: Reflector, seen: set[tuple[str, str]]) -> None:
    """``resourceVersion=0``, the answer read and parsed as one document."""
    async with reader._http.session().get(
        reader._http.url, params={"resourceVersion": "0"}, headers=await reader._http.headers()
    ) as reply:
        await check(reply)
        document = orjson.loads(await reply.read())
    await reader._lists._feed(document["items"], seen)
    await reader._sink.relisted(seen)


async def with_ijson(reader: Reflector, seen: set[tuple[str, str]]) -> None:
    """``resourceVersion=0``, parsed item by item by ijson (its C backend when it has one);
    uncompressed, as the reflector asks for it."""
    ijson = importlib.import_module("ijson")  # optional: only this variant needs it

    headers = {**await reader._http.headers(), "Accept-Encoding": "identity"}
    async with reader._http.session().get(
        reader._http.url, params={"resourceVersion": "0"}, headers=headers
    ) as reply:
        await check(reply)
        count = 0
        async for body in ijson.items(reply.content, "items.item", use_float=True):
            seen.add(object_key(body))
            reader._sink.upsert(body)
            count += 1
            if count % SLICE == 0:
                await asyncio.sleep(0)
    await reader._sink.relisted(seen)


def slowed(reader: Reflector, delay: float) -> None:
    """A pause of ``delay`` seconds after each chunk of the reader's stream that held items."""
    feed = reader._lists._feed

    async def slow_feed(items: list[dict[str, Any]], seen: set[tuple[str, str]]) -> None:
        await feed(items, seen)
        if items:
            await asyncio.sleep(delay)

    reader._lists._feed = slow_feed  # type: ignore[method-assign]


async def measure(variant: str, kubeconfig: str, delay: float) -> dict[str, Any]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    sink = ParsedSink()
    async with client.ApiClient(configuration) as api:
        reader = Reflector(
            api, PODS, sink, request_timeout=300.0, list_from_cache=variant == "cache-stream"
        )
        if delay and variant == "cache-stream":
            slowed(reader, delay)
        baseline = memory_kb("VmRSS")
        started = time.monotonic()
        seen: set[tuple[str, str]] = set()
        if variant in ("paged", "cache-stream"):
            await reader._relist()  # the reflector's own list, as at start-up
        elif variant == "cache-whole":
            await whole(reader, seen)
        else:
            await with_ijson(reader, seen)
        seconds = time.monotonic() - started
        peak = memory_kb("VmHWM")
        await reader.close()
    return {
        "seconds": seconds,
        "pods": len(sink.pods),
        "source": reader.health.list_source or variant,
        "rss_growth_mb": (peak - baseline) / 1024,
    }


# -- the driver ------------------------------------------------------------------------------------


async def create_pods(cluster: LocalCluster, pods: int, concurrency: int) -> None:
    shape = build_shape(100, 10)
    kube = Kube(cluster.server, cluster.token, str(cluster.ca_file), concurrency)
    try:
        await kube.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        for manifest in priority_class_manifests():
            await kube.create(manifest)
        plans = (pod_plan(shape, "pod", index) for index in range(pods))
        seconds = await run_pool(plans, kube.create_pod, concurrency, pods, "creating pods")
        say(f"{pods} pods in {seconds:.1f} s ({pods / seconds:.0f}/s)")
    finally:
        await kube.close()


def child_environment(ijson_path: str) -> dict[str, str]:
    """This process's environment, with ``ijson_path`` (if any) added to a child's PYTHONPATH."""
    environment = dict(os.environ)
    if ijson_path:
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [environment.get("PYTHONPATH", ""), ijson_path])
        )
    return environment


def run_variant(
    variant: str, cluster: LocalCluster, ijson_path: str, delay: float
) -> dict[str, Any]:
    """One list in a child process; the servers' CPU seconds around it."""
    pids = cluster.pids
    environment = child_environment(ijson_path)
    command = [sys.executable, __file__, "--measure", variant, str(cluster.kubeconfig), str(delay)]
    before = {name: cpu_seconds(pids[name]) for name in ("kube-apiserver", "etcd")}
    output = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    after = {name: cpu_seconds(pids[name]) for name in ("kube-apiserver", "etcd")}
    if output.returncode != 0:
        raise RuntimeError(f"{variant} failed:\n{output.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(output.stdout.strip().splitlines()[-1])
    result["apiserver_cpu_s"] = after["kube-apiserver"] - before["kube-apiserver"]
    result["etcd_cpu_s"] = after["etcd"] - before["etcd"]
    return result


def ijson_available(ijson_path: str) -> bool:
    command = [sys.executable, "-c", "import ijson; print(ijson.backend)"]
    environment = child_environment(ijson_path)
    found = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if found.returncode == 0:
        say(f"ijson backend: {found.stdout.strip()}")
    return found.returncode == 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--ijson-path", default="", help="a directory to import ijson from")
    parser.add_argument(
        "--chunk-delay", type=float, default=0.0, help="seconds of pause per parsed chunk"
    )
    parser.add_argument(
        "--measure", nargs=3, metavar=("VARIANT", "KUBECONFIG", "DELAY"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.measure:
        variant, kubeconfig, delay = args.measure
        print(json.dumps(asyncio.run(measure(variant, kubeconfig, float(delay)))), flush=True)
        return 0
    variants = [v for v in VARIANTS if v != "cache-ijson" or ijson_available(args.ijson_path)]
    results: dict[str, list[dict[str, Any]]] = {variant: [] for variant in variants}
    with LocalCluster(controller_manager=False) as cluster:
        asyncio.run(create_pods(cluster, args.pods, args.concurrency))
        time.sleep(2.0)  # let the servers settle after the creates
        for round_ in range(1, args.rounds + 1):
            for variant in variants:
                result = run_variant(variant, cluster, args.ijson_path, args.chunk_delay)
                say(f"round {round_} {variant}: {result}")
                if result["pods"] != args.pods:
                    raise RuntimeError(f"{variant} listed {result['pods']} of {args.pods} pods")
                results[variant].append(result)
    for variant, runs in results.items():

        def median(key: str, runs: list[dict[str, Any]] = runs) -> float:
            return float(statistics.median(run[key] for run in runs))

        print(
            f"list {variant} pods={args.pods} rounds={len(runs)} seconds={median('seconds'):.2f} "
            f"apiserver_cpu_s={median('apiserver_cpu_s'):.2f} "
            f"etcd_cpu_s={median('etcd_cpu_s'):.2f} "
            f"client_peak_rss_growth_mb={median('rss_growth_mb'):.0f}"
            + (
                f" fell_back_to_pages={sum(run['source'] == 'pages' for run in runs)}"
                if variant == "cache-stream"
                else ""
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
