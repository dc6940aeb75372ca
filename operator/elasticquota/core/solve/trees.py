"""One quota tree's manager state, and publishing a solve of it as results that say what changed.

Each tree keeps its static layout, its pod sums, the kernel's last output and its published
results. A solve rebuilds only the results of rows whose outputs moved (``tree_results``); a
result equal to the published one keeps the published object, so that an unchanged quota is the
same object from one solve to the next. Published mappings are never changed in place: a
snapshot or a loop that holds one across an ``await`` keeps what it was given. The names whose
results changed accumulate until the controller takes them (``QuotaEngine.take_changed``): it then
diffs and encodes only those quotas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticquota.core.keys import DEFAULT_TREE
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.accounting import ExactSums
from elasticquota.core.solve.layout import RowMemo, TreeLayout, build_layout
from elasticquota.core.solve.results import QuotaResult, is_over_used
from elasticquota.core.solve.totals import profile_total
from elasticquota.core.tree.topology import Topology
from elasticquota.kernels.arrays import SolveResult


@dataclass(slots=True)
class TreeState:
    """One tree's manager state: its static layout, its pod sums and its last result."""

    layout: TreeLayout
    sums: ExactSums
    dirty: bool = True
    #: The results as last published: replaced when one changes, never changed in place.
    results: Mapping[str, QuotaResult] = field(default_factory=dict)
    total: ResourceList = field(default_factory=dict)
    #: The kernel's last output: the next one is compared with it row by row.
    output: SolveResult | None = None
    #: Names whose result changed (at some solve) since the controller last took them.
    changed: set[str] = field(default_factory=set)
    #: The results as they were when the controller last took the changes.
    taken: Mapping[str, QuotaResult] = field(default_factory=dict)
    #: The names of ``results`` whose used exceeds their runtime (kept as results are published).
    over_used: frozenset[str] = frozenset()
    #: How many times the tree changed (pods, nodes) and how many solves were published: a solve
    #: prepared before the latest change leaves the tree dirty (``core.solve.solvejob``).
    version: int = 0
    publications: int = 0

    def touch(self) -> None:
        """Something the tree's solve reads changed."""
        self.dirty = True
        self.version += 1

    def publish(self, merged: Merged, output: SolveResult) -> bool:
        """Take a solve's results, merged with the published ones (``merge_results``, against
        the results published now): the moved names are noted as changed. True when the
        published results changed."""
        self.output = output
        if not merged.moved:
            return False
        self.results = merged.results
        self.over_used = merged.over_used
        self.changed |= merged.moved
        return True

    def take_changed(self) -> set[str]:
        """The names whose results differ from those of the last call (a result that changed and
        changed back meanwhile does not count); every name at the first call."""
        changed = {name for name in self.changed if self.results[name] != self.taken.get(name)}
        self.changed, self.taken = set(), self.results
        return changed

    def take_moved(self) -> set[str]:
        """The names whose results moved since the last take, uncompared: those that moved back
        are included (``take_changed`` without its comparison, which holds the caller's thread
        for tens of milliseconds when a burst moved all of a 10,000-quota tree: for a caller that
        compares in slices of its own)."""
        moved, self.changed, self.taken = self.changed, set(), self.results
        return moved


def touch_tree(trees: Mapping[str, TreeState], tree_id: str) -> None:
    """Note a change read by the tree's solve; none where the tree does not exist (yet)."""
    state = trees.get(tree_id)
    if state is not None:
        state.touch()


@dataclass(frozen=True, slots=True)
class Merged:
    """Published results with a solve's fresh ones merged in, and the names whose result moved."""

    results: Mapping[str, QuotaResult]
    moved: frozenset[str]
    #: The names of ``results`` whose used exceeds their runtime.
    over_used: frozenset[str]

    def with_results(self, fresh: Mapping[str, QuotaResult]) -> Merged:
        """These results with more merged in (the default tree's reserved quotas: a few)."""
        more = merge_results(self.results, fresh, self.over_used)
        return Merged(more.results, self.moved | more.moved, more.over_used)


def merge_results(
    published: Mapping[str, QuotaResult],
    fresh: Mapping[str, QuotaResult],
    over_used: frozenset[str] = frozenset(),
) -> Merged:
    """``published`` with the ``fresh`` results that differ from it (those of the rows that
    moved, see ``tree_results``) replacing theirs: a new mapping, ``published`` itself when none
    differs; ``over_used`` (those of ``published`` whose used exceeds their runtime) brought up
    to date for the moved ones. O(tree) when some moved: it runs with the solve, in its worker
    thread, where a burst that moves every row of a 10,000-quota tree costs the event loop
    nothing."""
    moved = frozenset(name for name, result in fresh.items() if published.get(name) != result)
    if not moved:
        return Merged(published, moved, over_used)
    results = dict(published)
    for name, result in fresh.items():  # in the solve's order: the first one sets the order
        if name in moved:
            results[name] = result
    now_over = {name for name in moved if is_over_used(fresh[name].used, fresh[name].runtime)}
    return Merged(results, moved, (over_used - moved) | now_over)


def build_trees(
    topology: Topology, node_keys: set[str], memo: RowMemo | None = None
) -> dict[str, TreeState]:
    """A fresh state (layout, zero sums, dirty, no results) for every tree of the topology.

    ``node_keys``: the resources the nodes have, distributed by the default tree even when no
    quota names them. ``memo``: the quotas' layout rows of the previous topology, reused where
    the spec did not change (and left holding exactly the current quotas').
    """
    trees = {}
    for tree_id in topology.trees():
        extra = set(node_keys) if tree_id == DEFAULT_TREE else set()
        extra |= set(profile_total(topology, tree_id))
        layout = build_layout(topology, tree_id, frozenset(extra), memo)
        trees[tree_id] = TreeState(layout, ExactSums(layout.size, layout.keys))
    if memo is not None:
        for name in [name for name in memo if name not in topology.quotas]:
            del memo[name]
    return trees
