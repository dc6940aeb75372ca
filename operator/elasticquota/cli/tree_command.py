"""``elastic-quota tree [QUOTA] [-n NS | -A] [--watch]``: the quota trees as the operator last
wrote them.

As ``kubectl get`` lists a namespace, ``tree`` shows the quotas of one namespace (``-n``, else the
context's) and the quotas above them, so that each is drawn at its place in its tree; ``-A`` shows
every namespace; ``QUOTA`` only that quota, its subtree and the path above it (not found in the
namespace: exit 1). ``-o json|yaml`` prints the ``QuotaTree`` document (docs/cli.md): the trees
with their totals and every shown quota under ``plan -o json``'s field names.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from elasticquota.cli.cluster import ClusterTarget, add_cluster_options, read, target
from elasticquota.cli.errors import NotFoundError
from elasticquota.cli.output import add_output_option, document, render
from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.plan.live import live_snapshot
from elasticquota.plan.report import quotas_section, trees_section
from elasticquota.plan.table import cell, render_trees

T = TypeVar("T")

CLEAR_SCREEN = "\x1b[H\x1b[2J"


def add_tree_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tree = commands.add_parser(
        "tree",
        help="show the live quota trees (min / max / request / used / runtime)",
        description="Read the ElasticQuotas of a cluster and draw their trees as plan does: the "
        "quotas of the namespace (-n, else the context's; -A: every namespace) with the quotas "
        "above them.",
    )
    tree.add_argument("quota", nargs="?", help="only this quota: its subtree and the path above it")
    add_cluster_options(tree, lists=True)
    add_output_option(tree)
    tree.add_argument("-w", "--watch", action="store_true", help="redraw until Ctrl-C")
    tree.add_argument(
        "--interval", type=seconds, default=2.0, help="seconds between redraws (above 0)"
    )
    tree.add_argument("--resources", metavar="NAMES", help="comma-separated resources to show")
    tree.set_defaults(handler=run_tree)


def seconds(text: str) -> float:
    """A number of seconds above 0 (argparse's type: a wrong one is a usage error, exit 2), so
    that ``--watch`` never lists every quota back to back."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"not a number of seconds above 0: {text!r}")
    return value


def select(snapshot: Snapshot, namespace: str | None, quota: str | None) -> Snapshot:
    """The quotas of ``namespace`` (None: all), or ``quota`` and its subtree, with every quota
    above them; only the trees that keep a quota. ``NotFoundError`` for an unknown ``quota``."""
    quotas = snapshot.quotas
    names = {n for n, q in quotas.items() if namespace is None or q.namespace == namespace}
    if quota is not None:
        if quota not in names:
            where = f" in namespace {namespace}" if namespace is not None else ""
            hint = " (-A: every namespace)" if namespace is not None else ""
            raise NotFoundError(f"quota {quota} not found{where}{hint}")
        names = {quota} | _below(snapshot, quota)
    kept = set(names)
    for name in names:
        kept.update(snapshot.ancestors(name))
    if namespace is None and quota is None:
        return snapshot
    return replace(
        snapshot,
        quotas={name: result for name, result in quotas.items() if name in kept},
        totals={
            tree: total
            for tree, total in snapshot.totals.items()
            if any(quotas[name].tree == tree for name in kept)
        },
    )


def _below(snapshot: Snapshot, quota: str) -> set[str]:
    children: dict[str, list[str]] = {}
    for name, result in snapshot.quotas.items():
        children.setdefault(result.parent, []).append(name)
    found: set[str] = set()
    tree = snapshot.quotas[quota].tree  # under the virtual root: the quotas of its own tree
    stack = [child for child in children.get(quota, []) if snapshot.quotas[child].tree == tree]
    while stack:
        name = stack.pop()
        if name not in found:
            found.add(name)
            stack.extend(children.get(name, []))
    return found


def tree_document(snapshot: Snapshot, namespace: str | None) -> dict[str, Any]:
    """The ``QuotaTree`` document (docs/cli.md)."""
    return document(
        "QuotaTree",
        {
            "namespace": namespace,
            "trees": trees_section(snapshot),
            "quotas": quotas_section(snapshot),
        },
    )


WIDE_COLUMNS = (
    "NAMESPACE", "QUOTA", "TREE", "RESOURCE", "MIN", "MAX", "REQUEST", "USED", "RUNTIME",
    "NP-REQUEST", "NP-USED",
)  # fmt: skip


def render_wide(snapshot: Snapshot, resources: set[str] | None) -> str:
    """One row per quota and resource, every figure the operator writes (``NP-``: the
    non-preemptible request and used), names whole; quotas depth-first under their parents."""
    rows = [list(WIDE_COLUMNS)]
    for result, depth in _depth_first(snapshot):
        figures = (
            result.min, result.max, result.request, result.used, result.runtime,
            result.non_preemptible_request, result.non_preemptible_used,
        )  # fmt: skip
        names = sorted(set().union(*figures))
        for resource in names or ["-"]:
            if resources is not None and resource not in resources and names:
                continue
            rows.append(
                [
                    result.namespace or "-",
                    "  " * max(depth - 1, 0) + result.name,
                    result.tree or "default",
                    resource,
                    *(cell(resource, figure.get(resource)) for figure in figures),
                ]
            )
    widths = [max(len(row[column]) for row in rows) for column in range(len(WIDE_COLUMNS))]
    return "".join(
        "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )


def _depth_first(snapshot: Snapshot) -> list[tuple[QuotaResult, int]]:
    children: dict[str, list[str]] = {}
    for name, result in snapshot.quotas.items():
        if name != ROOT_QUOTA:
            parent = result.parent if result.parent in snapshot.quotas else ROOT_QUOTA
            children.setdefault(parent, []).append(name)
    ordered: list[tuple[QuotaResult, int]] = []
    if ROOT_QUOTA in snapshot.quotas:
        ordered.append((snapshot.quotas[ROOT_QUOTA], 0))
    top = sorted(children.get(ROOT_QUOTA, []), key=lambda n: (snapshot.quotas[n].tree, n))
    stack = [(name, 1) for name in reversed(top)]
    while stack:
        name, depth = stack.pop()
        ordered.append((snapshot.quotas[name], depth))
        stack.extend((child, depth + 1) for child in sorted(children.get(name, []), reverse=True))
    return ordered


@dataclass(frozen=True, slots=True)
class Drawing:
    """One ``tree``'s text, and a note for stderr when part of it could not be read."""

    text: str
    note: str | None = None


async def draw(
    where: ClusterTarget, resources: set[str] | None, quota: str | None = None, fmt: str = "table"
) -> Drawing:
    """One ``tree`` (``fmt`` an ``-o`` format)."""
    from elasticquota.cli.cluster_objects import visible_quotas  # the API client when needed

    visible = await read(where, partial(visible_quotas, namespace=where.namespace))
    snapshot = select(live_snapshot(visible.items), where.namespace, quota)
    text = render(
        fmt,
        doc=lambda: tree_document(snapshot, where.namespace),
        table=lambda: "\n".join(render_trees(snapshot, resources)) + "\n",
        wide=lambda: render_wide(snapshot, resources),
    )
    if visible.only_namespace is None:
        return Drawing(text)
    return Drawing(text, f"note: {visible.only_namespace}'s quotas only: {LISTING_REFUSED}")


#: Why a namespace's view can lack the quotas above its own.
LISTING_REFUSED = (
    "this user may not list ElasticQuotas across the cluster (403), so the quotas above them, "
    "in other namespaces, are not shown"
)


def _nothing_shown(text: str, args: argparse.Namespace, where: ClusterTarget) -> bool:
    return (
        args.output in ("table", "wide")
        and where.namespace is not None
        and (len(text.splitlines()) <= 1)
    )


async def watch(args: argparse.Namespace, where: ClusterTarget, resources: set[str] | None) -> None:
    """Redraw every ``args.interval`` seconds until Ctrl-C (``KeyboardInterrupt``).

    Ctrl-C sets an event the watch waits on beside each draw and pause, rather than cancelling
    the task as ``asyncio.run`` would: on Python 3.11 a cancellation that meets a request's
    ``wait_for`` as it completes is lost, and the watch went on drawing after Ctrl-C."""
    interrupted = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupted.set)
    while True:
        drawing = await unless_interrupted(
            interrupted, draw(where, resources, args.quota, args.output)
        )
        text = drawing.text
        if args.output in ("table", "wide"):
            text = CLEAR_SCREEN + text
        elif args.output == "yaml":
            text = "---\n" + text
        sys.stdout.write(text)
        sys.stdout.flush()
        _say(drawing.note)
        await unless_interrupted(interrupted, asyncio.sleep(args.interval))


async def unless_interrupted(interrupted: asyncio.Event, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, or ``KeyboardInterrupt`` as soon as ``interrupted`` is set."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(interrupted.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if interrupted.is_set():
        task.cancel()
        raise KeyboardInterrupt
    waiter.cancel()
    return task.result()


def run_tree(args: argparse.Namespace) -> int:
    resources = {name.strip() for name in args.resources.split(",")} if args.resources else None
    where = target(args)
    if args.watch:
        asyncio.run(watch(args, where, resources))
        return 0
    drawing = asyncio.run(draw(where, resources, args.quota, args.output))
    sys.stdout.write(drawing.text)
    sys.stdout.flush()
    _say(drawing.note)
    if _nothing_shown(drawing.text, args, where):
        print(f"no quotas in namespace {where.namespace} (-A: every namespace)", file=sys.stderr)
    return 0


def _say(note: str | None) -> None:
    if note is not None:
        print(note, file=sys.stderr, flush=True)
