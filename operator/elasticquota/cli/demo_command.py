"""``elastic-quota demo``: the product live on this machine (what ``make run`` does).

Builds (once, cached) and starts a local kube-apiserver + etcd, installs the CRDs, starts the
operator with ``--simulate-nodes`` (there is no scheduler or kubelet locally: the operator binds
pods that fit and marks them Running itself, clearly logged as a SIMULATION), applies the example
manifests, and redraws the live tree until Ctrl-C (or ``--seconds``). Then it stops everything it
started.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elasticquota.plan.loader import load_paths

BANNER = (
    "SIMULATION: this local cluster has no scheduler and no kubelets. The operator runs with\n"
    "--simulate-nodes: it binds the pods that fit their quota to the example nodes and marks them\n"
    "Running itself. Against a real cluster, `elastic-quota run` needs none of that."
)


def add_demo_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = commands.add_parser(
        "demo",
        help="run the product live on a local control plane with the example manifests",
        description=__doc__,
    )
    demo.add_argument(
        "-f", "--filename", dest="paths", action="append", metavar="PATH",
        help="manifests to apply (default: examples/)",
    )  # fmt: skip
    demo.add_argument(
        "--seconds", type=float, help="stop after this many seconds (default: until Ctrl-C)"
    )
    demo.add_argument("--interval", type=float, default=2.0, help="seconds between redraws")
    demo.set_defaults(handler=run_demo)


async def _apply(paths: list[str]) -> int:
    from elasticquota.kube.apply import apply_manifest, apply_order
    from elasticquota.kube.client import make_api_client

    loaded = load_paths(paths)
    manifests = [
        *loaded.namespaces,
        *loaded.priority_classes,
        *loaded.nodes,
        *loaded.profiles,
        *loaded.quotas,
        *loaded.pods,
    ]
    api = await make_api_client()
    try:
        created = 0
        for manifest in apply_order(manifests):
            created += await apply_manifest(api, manifest)
        return created
    finally:
        await api.close()


async def _show(interval: float, seconds: float | None) -> None:
    from elasticquota.cli.tree_command import CLEAR_SCREEN, draw

    deadline = time.monotonic() + seconds if seconds is not None else None
    while True:
        text = await draw(None, None)
        sys.stdout.write(f"{CLEAR_SCREEN}{BANNER}\n\n{text}")
        sys.stdout.flush()
        if deadline is not None and time.monotonic() >= deadline:
            return
        await asyncio.sleep(interval)


def _start_operator(log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "elasticquota", "run",
        "--simulate-nodes", "--metrics-port", "0", "--reconcile-interval", "0.5",
    ]  # fmt: skip
    with log.open("wb") as sink:
        return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)


def run_demo(args: argparse.Namespace) -> int:
    from elasticquota.devcluster import LocalCluster, apply_crds_sync, default_crd_dir

    paths = args.paths or ["examples"]
    log = Path(tempfile.mkstemp(prefix="elastic-quota-operator-", suffix=".log")[1])
    print("starting the local control plane (the first run builds it: about 3 minutes)...")
    with LocalCluster() as cluster:
        apply_crds_sync(cluster.kubeconfig, default_crd_dir())
        os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
        print(f"control plane up: KUBECONFIG={cluster.kubeconfig}; operator log: {log}")
        operator = _start_operator(log)
        try:
            created = asyncio.run(_apply(paths))
            print(f"applied {created} objects from {', '.join(paths)}")
            asyncio.run(_show(args.interval, args.seconds))
        except KeyboardInterrupt:
            pass
        finally:
            operator.terminate()
            try:
                operator.wait(timeout=20)
            except subprocess.TimeoutExpired:
                operator.kill()
            print("\nstopped the operator and the local control plane")
    return 0
