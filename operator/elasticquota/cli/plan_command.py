"""``elastic-quota plan``: what the operator would compute for a set of manifests.

It exits non-zero only when its input cannot be read; broken objects are reported in the output's
problems and everything else is still computed.
"""

from __future__ import annotations

import argparse
import json
import sys

from elasticquota.core.solve.engine import EngineSettings
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import UnreadableInputError, load_paths
from elasticquota.plan.report import plan_report
from elasticquota.plan.table import render_plan, render_users

EXIT_UNREADABLE = 2


def add_plan_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``elastic-quota plan``."""
    plan = commands.add_parser(
        "plan",
        help="compute quotas, admission and revocation for manifests (what-if)",
        description="Read ElasticQuota, ElasticQuotaProfile, Pod, Node and Namespace manifests "
        "and print what the operator would compute.",
    )
    plan.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="append",
        required=True,
        metavar="PATH",
        help="a manifest file or a directory of them (repeatable)",
    )
    plan.add_argument("-o", "--output", choices=("table", "json"), default="table")
    plan.add_argument(
        "--no-min-quota-scale",
        action="store_true",
        help="do not scale mins down when a level's available amount is below their sum",
    )
    plan.add_argument(
        "--check-parent-quota",
        action="store_true",
        help="admission also checks every ancestor quota (enableCheckParentQuota)",
    )
    plan.add_argument(
        "--resources",
        metavar="NAMES",
        help="comma-separated resources to show in the table (default: all)",
    )
    plan.add_argument(
        "--users",
        action="store_true",
        help="show the user and group limits view instead of the quota trees: usage, running "
        "applications and the limit in force per user and group at every quota of their path",
    )
    plan.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    try:
        manifests = load_paths(args.paths)
    except UnreadableInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNREADABLE
    settings = EngineSettings(scale_min_quota=not args.no_min_quota_scale)
    plan = compute_plan(manifests, settings, check_ancestors=args.check_parent_quota)
    for note in plan.skipped:
        print(f"note: skipped {note}: not a kind plan reads", file=sys.stderr)
    if args.output == "json":
        json.dump(plan_report(plan), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        resources = {name.strip() for name in args.resources.split(",")} if args.resources else None
        render = render_users if args.users else render_plan
        sys.stdout.write(render(plan, resources))
    return 0
