"""``elastic-quota usage users|groups [-n NAME]``: usage under the user and group limits.

What YuniKorn's ``/usage/users`` and ``/usage/groups`` endpoints show, from the live cluster (or
manifests with ``-f``): per user (group) and per quota on its path, the usage, the running
applications, ``maxResources``, ``maxApplications`` and the name of the limit in force. The figures
are computed from the pods as the operator computes them (``plan``'s engine). ``-o json`` prints
``plan -o json``'s ``users`` (``groups``) section, the same stable contract.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from elasticquota.cli.errors import ClusterReadError
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests, UnreadableInputError, load_paths
from elasticquota.plan.usage import UnknownSubjectError, render_usage, usage_section

EXIT_NOT_FOUND = 1
EXIT_UNREADABLE = 2


def add_usage_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "usage",
        help="show users' or groups' usage under their limits",
        description="Per user (or group) and per quota on its path: usage, running "
        "applications, the limit in force with its maxResources and maxApplications (as "
        "YuniKorn's usage endpoints). Reads the cluster of the kubeconfig, or manifests with -f.",
    )
    command.add_argument("section", choices=("users", "groups"))
    command.add_argument("-n", "--name", help="only this user (group)")
    command.add_argument("-o", "--output", choices=("table", "json"), default="table")
    command.add_argument(
        "-f", "--filename", dest="paths", action="append", metavar="PATH",
        help="read manifests instead of a cluster (repeatable)",
    )  # fmt: skip
    command.add_argument("--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, in-cluster)")
    command.add_argument("--resources", metavar="NAMES", help="comma-separated resources to show")
    command.set_defaults(handler=run_usage)


def _from_cluster(kubeconfig: str | None) -> Manifests:
    from elasticquota.cli.cluster_objects import read_cluster  # the API client only when needed

    return asyncio.run(read_cluster(kubeconfig))


def run_usage(args: argparse.Namespace) -> int:
    try:
        manifests = load_paths(args.paths) if args.paths else _from_cluster(args.kubeconfig)
    except (UnreadableInputError, ClusterReadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    snapshot = compute_plan(manifests).snapshot
    try:
        if args.output == "json":
            text = json.dumps(usage_section(snapshot, args.section, args.name), indent=2) + "\n"
        else:
            resources = (
                {name.strip() for name in args.resources.split(",")} if args.resources else None
            )
            text = render_usage(snapshot, args.section, args.name, resources)
    except UnknownSubjectError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    sys.stdout.write(text)
    return 0
