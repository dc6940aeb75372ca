"""`elastic-quota explain POD`: why a pod waits or would be revoked, from a cluster or files.

``-o json|yaml`` prints the ``PodExplanation`` document (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from elasticquota.cli.cluster import add_cluster_options, target
from elasticquota.cli.errors import NotFoundError
from elasticquota.cli.inputs import add_files_option, read_files_or_cluster
from elasticquota.cli.min_runtime import add_min_runtime_option, min_runtime_of
from elasticquota.cli.output import add_output_option, document, render
from elasticquota.core.decisions.explain import Explanation, explain
from elasticquota.core.quantities.resources import format_resource_list
from elasticquota.plan.compute import Plan, compute_plan


def add_explain_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "explain",
        help="say why a pod waits or would be revoked",
        description="Explain a pod's admission: its quota, the path to the root with runtime / "
        "used / request at each level, what blocks it and what would have to change. Reads the "
        "cluster of the kubeconfig, or manifests with -f.",
    )
    command.add_argument("pod", help="NAMESPACE/NAME, or NAME in the namespace of -n")
    add_files_option(command)
    command.add_argument(
        "--check-parent-quota", action="store_true", help="also check every ancestor quota"
    )
    add_min_runtime_option(command)
    add_min_runtime_option(command, "preemption")
    add_cluster_options(command, lists=False)
    add_output_option(command)
    command.set_defaults(handler=run_explain)


def _pod_key(args: argparse.Namespace) -> str:
    if "/" in args.pod:
        return str(args.pod)
    if args.namespace is None and not args.paths:
        return f"{target(args).namespace}/{args.pod}"
    return f"{args.namespace or 'default'}/{args.pod}"


def explanation_document(found: Explanation) -> dict[str, Any]:
    """The ``PodExplanation`` document (docs/cli.md)."""
    return document(
        "PodExplanation",
        {
            "pod": found.pod,
            "quota": found.quota,
            "state": found.state,
            "verdict": found.verdict,
            "notes": list(found.notes),
            "heldBy": list(found.held_by),
            "preemption": found.preemption,
            "keptByBudgets": [{"pod": pod, "reason": why} for pod, why in found.kept],
            "path": [
                {
                    "quota": level.quota,
                    "runtime": format_resource_list(level.runtime),
                    "used": format_resource_list(level.used),
                    "request": format_resource_list(level.request),
                }
                for level in found.levels
            ],
            "advice": list(found.advice),
        },
    )


#: How many pods of the same name elsewhere a "not found" names.
NAMESAKES_SHOWN = 3


def missing_pod(key: str, plan: Plan) -> NotFoundError:
    """Why ``key`` cannot be explained: the problems that kept it out, or that no such pod exists
    (naming pods of that name in other namespaces, as a user who forgot ``-n`` wants)."""
    problems = [problem.message for problem in plan.problems if problem.object == f"Pod {key}"]
    if problems:
        return NotFoundError(f"pod {key} cannot be explained: {'; '.join(problems)}")
    name = key.partition("/")[2]
    namesakes = sorted(other for other in plan.snapshot.pods if other.partition("/")[2] == name)
    if not namesakes:
        return NotFoundError(f"pod {key} not found")
    shown = ", ".join(namesakes[:NAMESAKES_SHOWN])
    hidden = len(namesakes) - NAMESAKES_SHOWN
    more = f" and {hidden} more" if hidden > 0 else ""
    return NotFoundError(f"pod {key} not found; pods named {name}: {shown}{more}")


def run_explain(args: argparse.Namespace) -> int:
    key = _pod_key(args)
    manifests, _ = read_files_or_cluster(args)
    for unread in manifests.unread:
        print(f"note: {unread}", file=sys.stderr)
    plan = compute_plan(
        manifests,
        check_ancestors=args.check_parent_quota,
        min_runtime=min_runtime_of(args),
        preemption_min_runtime=min_runtime_of(args, "preemption"),
    )
    snapshot = plan.snapshot
    if key not in snapshot.pods:
        raise missing_pod(key, plan)
    found = explain(
        snapshot,
        key,
        args.check_parent_quota,
        plan.released,
        plan.min_runtimes,
        plan.preemption_min_runtimes,
        plan.budgets,
    )
    sys.stdout.write(
        render(args.output, doc=lambda: explanation_document(found), table=found.render)
    )
    return 0
