"""``elastic-quota usage users|groups [NAME] [-n NS | -A]``: usage under the user and group limits.

What YuniKorn's ``/usage/users`` and ``/usage/groups`` endpoints show, from the live cluster (or
manifests with ``-f``): per user (group) and per quota on its path, the usage, the running
applications, ``maxResources``, ``maxApplications`` and the name of the limit in force. The figures
are computed from the pods as the operator computes them (``plan``'s engine), over the whole
cluster; the rows shown are those of the quotas of the namespace (``-n``, else the context's; with
``-f``: every namespace unless ``-n``), ``-A`` every quota. ``-o json|yaml`` prints the
``UserUsage`` (``GroupUsage``) document: ``plan -o json``'s ``users`` (``groups``) section under
``apiVersion`` and ``kind`` (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Set
from dataclasses import replace
from typing import Any, cast

from elasticquota.cli.cluster import add_cluster_options
from elasticquota.cli.errors import NotFoundError
from elasticquota.cli.inputs import add_files_option, read_files_or_cluster
from elasticquota.cli.output import add_output_option, document, render
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.userlimits import SubjectUsage
from elasticquota.core.userlimits.tracker import UserLimitsView
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests
from elasticquota.plan.usage import UnknownSubjectError, render_usage, usage_section

KINDS = {"users": "UserUsage", "groups": "GroupUsage"}


def add_usage_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "usage",
        help="show users' or groups' usage under their limits",
        description="Per user (or group) and per quota on its path: usage, running "
        "applications, the limit in force with its maxResources and maxApplications (as "
        "YuniKorn's usage endpoints), at the quotas of the namespace (-n, else the context's; "
        "-A: every namespace). Reads the cluster of the kubeconfig, or manifests with -f.",
    )
    command.add_argument("section", choices=("users", "groups"))
    command.add_argument("name", nargs="?", help="only this user (group)")
    add_files_option(command)
    command.add_argument("--resources", metavar="NAMES", help="comma-separated resources to show")
    add_cluster_options(command, lists=True)
    add_output_option(command)
    command.set_defaults(handler=run_usage)


def _manifests(args: argparse.Namespace) -> tuple[Manifests, str | None]:
    """The objects and the namespace whose quotas are shown (None: every one)."""
    manifests, where = read_files_or_cluster(args, budgets=False)  # it names no victim
    if where is not None:
        return manifests, where.namespace
    return manifests, None if args.all_namespaces else args.namespace


class _QuotasOf:
    """A user limits view whose usage lines are those at ``quotas`` only."""

    def __init__(self, view: UserLimitsView, quotas: Set[str]) -> None:
        self._view = view
        self._quotas = quotas

    def usage(self) -> list[SubjectUsage]:
        return [line for line in self._view.usage() if line.quota in self._quotas]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)


def in_namespace(snapshot: Snapshot, namespace: str | None) -> Snapshot:
    """The snapshot whose user and group usage is that at the quotas of ``namespace``."""
    if namespace is None:
        return snapshot
    quotas = {name for name, q in snapshot.quotas.items() if q.namespace == namespace}
    return replace(
        snapshot, user_limits=cast(UserLimitsView, _QuotasOf(snapshot.user_limits, quotas))
    )


def run_usage(args: argparse.Namespace) -> int:
    manifests, namespace = _manifests(args)
    snapshot = in_namespace(compute_plan(manifests).snapshot, namespace)
    resources = {name.strip() for name in args.resources.split(",")} if args.resources else None
    try:
        text = render(
            args.output,
            doc=lambda: document(
                KINDS[args.section], usage_section(snapshot, args.section, args.name)
            ),
            table=lambda: render_usage(snapshot, args.section, args.name, resources),
        )
    except UnknownSubjectError as error:
        where = f" in namespace {namespace} (-A: every namespace)" if namespace else ""
        raise NotFoundError(f"{error}{where}") from error
    sys.stdout.write(text)
    return 0
