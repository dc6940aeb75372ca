"""``elastic-quota plan``: what the operator would compute for a set of manifests.

Broken objects are reported in the output's problems and everything else is still computed. Exit
codes: 0 (computed; with ``--fail-on-problems``: and no error or warning among the problems),
1 (``--fail-on-problems`` and at least one error or warning; notes never fail), 2 (the input
cannot be read: a missing path, broken YAML or JSON).
"""

from __future__ import annotations

import argparse
import sys

from elasticquota.cli.errors import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from elasticquota.cli.inputs import read_files
from elasticquota.cli.min_runtime import add_min_runtime_option, min_runtime_of
from elasticquota.cli.output import add_output_option, document, render
from elasticquota.core.model.models import Problem
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.findings import ERROR, failing, severity_of
from elasticquota.plan.report import plan_report
from elasticquota.plan.table import render_plan, render_users

EXIT_UNREADABLE = EXIT_USAGE


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
        help="a manifest file or a directory of them, - for standard input (repeatable)",
    )
    add_output_option(plan)
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
    add_min_runtime_option(plan)
    add_min_runtime_option(plan, "preemption")
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
    plan.add_argument(
        "--fail-on-problems",
        action="store_true",
        help="exit 1 when any problem is an error or a warning (a webhook refusal, an object "
        "the operator leaves out, an unknown field, resource name or key); notes never fail. "
        "The output is printed either way.",
    )
    plan.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    manifests = read_files(args.paths)  # unreadable: one line, exit EXIT_UNREADABLE
    settings = EngineSettings(scale_min_quota=not args.no_min_quota_scale)
    plan = compute_plan(
        manifests,
        settings,
        check_ancestors=args.check_parent_quota,
        judge=True,
        min_runtime=min_runtime_of(args),
        preemption_min_runtime=min_runtime_of(args, "preemption"),
    )
    for note in plan.skipped:
        print(f"note: skipped {note}: not a kind plan reads", file=sys.stderr)
    resources = {name.strip() for name in args.resources.split(",")} if args.resources else None
    table = render_users if args.users else render_plan
    sys.stdout.write(
        render(
            args.output,
            doc=lambda: document("Plan", plan_report(plan)),
            table=lambda: table(plan, resources),
        )
    )
    return _exit_code(plan.problems, args.fail_on_problems)


def _exit_code(problems: list[Problem], fail_on_problems: bool) -> int:
    """``EXIT_PROBLEMS`` when asked to fail and an error or warning is found (said on stderr in
    one line), else ``EXIT_OK``."""
    found = failing(problems)
    if not fail_on_problems or not found:
        return EXIT_OK
    errors = sum(1 for problem in found if severity_of(problem) == ERROR)
    print(
        f"error: {len(found)} problems ({errors} errors, {len(found) - errors} warnings); "
        "failing as --fail-on-problems asks",
        file=sys.stderr,
    )
    return EXIT_PROBLEMS
