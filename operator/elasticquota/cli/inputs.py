"""Where a reading command's objects come from: manifest files (``-f``) or the cluster.

``plan`` reads files only; ``explain`` and ``usage`` read the files of ``-f``, else the cluster of
the kubeconfig. A file that cannot be read or parsed ends the command with an ``InputError`` (one
line naming the file, exit 2); the Kubernetes client is imported only when the cluster is read.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterable

from elasticquota.cli.cluster import ClusterTarget, target
from elasticquota.cli.errors import InputError
from elasticquota.plan.loader import Manifests, UnreadableInputError, load_paths


def add_files_option(command: argparse.ArgumentParser) -> None:
    """``-f/--filename``: manifests read instead of a cluster (repeatable)."""
    command.add_argument(
        "-f", "--filename", dest="paths", action="append", metavar="PATH",
        help="read manifests instead of a cluster, - for standard input (repeatable)",
    )  # fmt: skip


def read_files(paths: Iterable[str]) -> Manifests:
    """Every object of the files and directories; ``InputError`` for one that cannot be read."""
    try:
        return load_paths(paths)
    except UnreadableInputError as error:
        raise InputError(str(error)) from error


def read_files_or_cluster(
    args: argparse.Namespace, budgets: bool = True
) -> tuple[Manifests, ClusterTarget | None]:
    """The objects of ``-f``'s files (no target), else those of the cluster and its target; its
    PodDisruptionBudgets only if ``budgets``."""
    if args.paths:
        return read_files(args.paths), None
    from elasticquota.cli.cluster_objects import read_cluster  # the API client only when needed

    where = target(args)
    return asyncio.run(read_cluster(where, budgets)), where
