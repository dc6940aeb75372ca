"""``elastic-quota tree [--watch]``: the quota trees as the operator last wrote them."""

from __future__ import annotations

import argparse
import asyncio
import sys

from elasticquota.plan.live import live_snapshot
from elasticquota.plan.table import render_trees

CLEAR_SCREEN = "\x1b[H\x1b[2J"


def add_tree_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tree = commands.add_parser(
        "tree",
        help="show the live quota trees (min / max / request / used / runtime)",
        description="Read the ElasticQuotas of a cluster and draw their trees as plan does.",
    )
    tree.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, in-cluster)")
    tree.add_argument("-w", "--watch", action="store_true", help="redraw until Ctrl-C")
    tree.add_argument("--interval", type=float, default=2.0, help="seconds between redraws")
    tree.add_argument("--resources", metavar="NAMES", help="comma-separated resources to show")
    tree.set_defaults(handler=run_tree)


async def draw(kubeconfig: str | None, resources: set[str] | None) -> str:
    from elasticquota.kube.client import make_api_client  # the API client only when needed
    from elasticquota.kube.quotas import list_quotas

    api = await make_api_client(kubeconfig)
    try:
        objects = await list_quotas(api)
    finally:
        await api.close()
    return "\n".join(render_trees(live_snapshot(objects), resources)) + "\n"


async def watch(args: argparse.Namespace, resources: set[str] | None) -> None:
    while True:
        text = await draw(args.kubeconfig, resources)
        sys.stdout.write(CLEAR_SCREEN + text)
        sys.stdout.flush()
        await asyncio.sleep(args.interval)


def run_tree(args: argparse.Namespace) -> int:
    resources = {name.strip() for name in args.resources.split(",")} if args.resources else None
    try:
        if args.watch:
            asyncio.run(watch(args, resources))
        else:
            sys.stdout.write(asyncio.run(draw(args.kubeconfig, resources)))
    except KeyboardInterrupt:
        pass
    return 0
