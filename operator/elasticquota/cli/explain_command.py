"""`elastic-quota explain POD`: why a pod waits or would be revoked, from a cluster or files."""

from __future__ import annotations

import argparse
import asyncio
import sys

from elasticquota.cli.errors import ClusterReadError
from elasticquota.core.decisions.explain import explain
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests, UnreadableInputError, load_paths

EXIT_NOT_FOUND = 1
EXIT_UNREADABLE = 2


def add_explain_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "explain",
        help="say why a pod waits or would be revoked",
        description="Explain a pod's admission: its quota, the path to the root with runtime / "
        "used / request at each level, what blocks it and what would have to change. Reads the "
        "cluster of the kubeconfig, or manifests with -f.",
    )
    command.add_argument("pod", help="NAMESPACE/NAME, or NAME with -n")
    command.add_argument("-n", "--namespace", default="default")
    command.add_argument(
        "-f", "--filename", dest="paths", action="append", metavar="PATH",
        help="read manifests instead of a cluster (repeatable)",
    )  # fmt: skip
    command.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, in-cluster)")
    command.add_argument(
        "--check-parent-quota", action="store_true", help="also check every ancestor quota"
    )
    command.set_defaults(handler=run_explain)


def _from_cluster(kubeconfig: str | None) -> Manifests:
    from elasticquota.cli.cluster_objects import read_cluster  # the API client only when needed

    return asyncio.run(read_cluster(kubeconfig))


def run_explain(args: argparse.Namespace) -> int:
    key = args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}"
    try:
        manifests = load_paths(args.paths) if args.paths else _from_cluster(args.kubeconfig)
    except (UnreadableInputError, ClusterReadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    snapshot = compute_plan(manifests, check_ancestors=args.check_parent_quota).snapshot
    if key not in snapshot.pods:
        print(
            f"error: pod {key} not found (or not parseable: see `plan` problems)", file=sys.stderr
        )
        return EXIT_NOT_FOUND
    sys.stdout.write(explain(snapshot, key, args.check_parent_quota).render())
    return 0
