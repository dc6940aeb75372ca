"""Command line: ``elastic-quota plan`` (what-if over manifests).

``plan`` exits non-zero only when its input cannot be read; broken objects are reported in the
output's problems and everything else is still computed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from elasticquota import __version__
from elasticquota.core.engine import EngineSettings
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import UnreadableInputError, load_paths
from elasticquota.plan.report import plan_report
from elasticquota.plan.table import render_plan

EXIT_UNREADABLE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elastic-quota", description="Hierarchical elastic quota for Kubernetes."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
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
    return parser


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
        sys.stdout.write(render_plan(plan, resources))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "plan":
        return run_plan(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
