"""One tree's solve, in three steps, so that its heavy middle can run off the event loop.

A solve of a 10,000-quota tree turns the kernel's arrays into thousands of ``QuotaResult`` objects:
hundreds of milliseconds of Python, far beyond the event loop's budget when every row moved (a burst
of pods). ``QuotaEngine.prepare_solve`` copies what the solve reads (the pod sums' int64 mirror, the
tree's total; microseconds) into a ``SolveJob``; ``compute`` runs the kernel and builds the results
from the job alone, touching nothing the engine changes afterwards (the layout, topology and
published results a job refers to are never changed in place), so it may run in a worker thread
while events keep arriving; ``QuotaEngine.finish_solve`` publishes them, unless the topology was
rebuilt or another solve published meanwhile (then the job is dropped and the tree stays dirty).
The tree stays dirty too when events changed it after the copy. The synchronous ``solve`` runs the
same three steps in a row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from elasticquota.core.keys import DEFAULT_TREE, ROOT_QUOTA
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.accounting import Account
from elasticquota.core.solve.layout import TreeLayout, total_row
from elasticquota.core.solve.results import QuotaResult
from elasticquota.core.solve.treeresults import tree_results
from elasticquota.core.solve.trees import Merged, merge_results
from elasticquota.core.tree.topology import Topology
from elasticquota.kernels.arrays import Int64Array, SolveResult, TreeArrays

#: The kernel, or its plain-Python twin (tests run both).
Solver = Callable[[TreeArrays, bool], SolveResult]


@dataclass(frozen=True, slots=True)
class SolveJob:
    """Everything one tree's solve reads, as of ``prepare_solve``."""

    tree_id: str
    #: The engine's topology epoch, the tree's change count and its publication count then.
    epoch: int
    version: int
    publications: int
    arrays: TreeArrays
    total: ResourceList
    layout: TreeLayout
    topology: Topology
    previous: SolveResult | None
    published: Mapping[str, QuotaResult]
    #: The names of ``published`` whose used exceeds their runtime.
    over_used: frozenset[str]
    scale_min_quota: bool


@dataclass(frozen=True, slots=True)
class SolveOutcome:
    """The kernel's output and the job's published results with those of the rows that moved
    merged in (see ``tree_results``, ``merge_results``)."""

    output: SolveResult
    merged: Merged
    #: The default tree's virtual root as the kernel computed it, left out of ``merged``: its
    #: published result adds the reserved quotas' usage as of the publication (``finish_solve``).
    kernel_root: QuotaResult | None = None


def compute(job: SolveJob, solver: Solver) -> SolveOutcome:
    """The kernel and the results: reads the job only, safe in any thread."""
    output = solver(job.arrays, job.scale_min_quota)
    fresh = tree_results(job.layout, job.topology, output, job.previous)
    kernel_root = fresh[ROOT_QUOTA] if job.tree_id == DEFAULT_TREE else None
    if kernel_root is not None and ROOT_QUOTA in job.published:
        del fresh[ROOT_QUOTA]  # (the first time it stays: it sets the results' order, root first)
    return SolveOutcome(output, merge_results(job.published, fresh, job.over_used), kernel_root)


def tree_arrays(
    layout: TreeLayout, mirror: Sequence[Int64Array], total: ResourceList
) -> TreeArrays:
    """The kernel's inputs: copies of the pod sums' int64 mirror (events change the sums while a
    worker solves), the layout's columns and the tree's total as a row."""
    total_values, present = total_row(layout, total)
    sums = [array.copy() for array in mirror]
    return TreeArrays(
        layout.child_start,
        sums[Account.REQUEST],
        sums[Account.USED],
        sums[Account.NP_REQUEST],
        sums[Account.NP_USED],
        layout.spec_min,
        layout.request_floor,
        layout.cap,
        layout.weight,
        layout.distributes,
        total_values,
        present,
    )
