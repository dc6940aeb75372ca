"""Quota trees from a flat set of quotas: which quotas are valid, who is whose child, which tree.

A quota that breaks a structural rule (duplicated name, missing parent, parent not marked
``is-parent``, a cycle, a tree id different from its parent's) is left out of its tree together with
its descendants, and a ``Problem`` names it and the rule. Every other quota is kept: one broken
quota never stops the rest from being computed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from elasticquota.core.keys import DEFAULT_QUOTA, DEFAULT_TREE, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.models import Problem, QuotaSpec


@dataclass(slots=True)
class Topology:
    """The valid quotas, arranged in trees, and the problems found on the way."""

    quotas: dict[str, QuotaSpec] = field(default_factory=dict)
    tree_of: dict[str, str] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    #: Top-level quotas (children of the virtual root) per tree id, sorted by name.
    top_level: dict[str, list[str]] = field(default_factory=dict)
    #: The system and default quotas as given (None: not present, reference defaults apply).
    reserved: dict[str, QuotaSpec] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def trees(self) -> list[str]:
        """Every tree id with at least one quota, plus the default tree, sorted."""
        return sorted({DEFAULT_TREE, *self.top_level})

    def path_to_root(self, name: str) -> list[str]:
        """``[name, parent, ..., top-level quota]`` (the virtual root excluded)."""
        path = [name]
        while (parent := self.quotas[path[-1]].parent) != ROOT_QUOTA:
            path.append(parent)
        return path

    def breadth_first(self, tree_id: str) -> list[str]:
        """Quotas of one tree in BFS order, siblings sorted by name (byte order)."""
        order = list(self.top_level.get(tree_id, []))
        for name in order:
            order.extend(self.children.get(name, []))
        return order


def build_topology(specs: Iterable[QuotaSpec]) -> Topology:
    """Validate the structure of a set of quotas and arrange the valid ones in trees."""
    topology = Topology()
    candidates = _unique_candidates(specs, topology)
    verdicts: dict[str, str | None] = {}
    for name in sorted(candidates):
        _judge(name, candidates, verdicts)
    for name in sorted(candidates):
        reason = verdicts[name]
        if reason is None:
            topology.quotas[name] = candidates[name]
        else:
            topology.problems.append(
                Problem(
                    candidates[name].ref,
                    f"{reason}; the quota is left out of its tree",
                    left_out=True,
                )
            )
    _assign_trees(topology)
    return topology


def _unique_candidates(specs: Iterable[QuotaSpec], topology: Topology) -> dict[str, QuotaSpec]:
    """Non-reserved quotas by name; of duplicated names the oldest (then by namespace) wins.

    The system and default quotas follow the same rule and go to ``topology.reserved``.
    """
    by_name: dict[str, list[QuotaSpec]] = {}
    for spec in specs:
        if spec.name == ROOT_QUOTA:
            continue  # the virtual root: its object carries no spec the engine uses
        by_name.setdefault(spec.name, []).append(spec)
    candidates: dict[str, QuotaSpec] = {}
    for name, group in sorted(by_name.items()):  # problems in name order, whatever the input
        group.sort(key=lambda spec: (spec.created or "~", spec.namespace))
        if name in (SYSTEM_QUOTA, DEFAULT_QUOTA):
            topology.reserved[name] = group[0]
        else:
            candidates[name] = group[0]
        for duplicate in group[1:]:
            topology.problems.append(
                Problem(
                    duplicate.ref,
                    f"quota name {name!r} is already used by {group[0].ref}; quota names must be "
                    "unique across namespaces; the quota is left out of its tree",
                    left_out=True,
                )
            )
    return candidates


def _judge(name: str, candidates: Mapping[str, QuotaSpec], verdicts: dict[str, str | None]) -> None:
    """Decide whether ``name`` and its ancestors are valid (None) or why not (a message)."""
    path: list[str] = []
    current = name
    while current not in verdicts:
        if current in path:
            cycle = [*path[path.index(current) :], current]
            for member in cycle[:-1]:
                verdicts[member] = f"parent chain forms a cycle: {' -> '.join(cycle)}"
            break
        path.append(current)
        parent = candidates[current].parent
        if parent == ROOT_QUOTA:
            verdicts[current] = None
            break
        if parent not in candidates:
            verdicts[current] = f"parent quota {parent!r} does not exist"
            break
        if not candidates[parent].is_parent:
            verdicts[current] = (
                f"parent quota {parent!r} is not marked quota.scheduling.koordinator.sh/"
                "is-parent=true"
            )
            break
        current = parent
    for child in reversed(path):
        if child in verdicts:
            continue
        parent_reason = verdicts[candidates[child].parent]
        verdicts[child] = (
            None
            if parent_reason is None
            else f"ancestor quota {candidates[child].parent!r} is left out"
        )


def _assign_trees(topology: Topology) -> None:
    """Tree ids (inherited from the parent when unset) and the parent/child lists."""
    for name in sorted(topology.quotas):
        _tree_of(name, topology)
    for name in sorted(topology.quotas):
        if name not in topology.tree_of:
            continue
        parent = topology.quotas[name].parent
        if parent == ROOT_QUOTA:
            topology.top_level.setdefault(topology.tree_of[name], []).append(name)
        else:
            topology.children.setdefault(parent, []).append(name)


def _tree_of(name: str, topology: Topology) -> str | None:
    """The effective tree id of a valid quota, or None after reporting a tree-id conflict."""
    if name in topology.tree_of:
        return topology.tree_of[name]
    spec = topology.quotas.get(name)
    if spec is None:
        return None
    if spec.parent == ROOT_QUOTA:
        topology.tree_of[name] = spec.tree_id
        return spec.tree_id
    parent_tree = _tree_of(spec.parent, topology)
    if parent_tree is None:
        _drop(name, topology, f"ancestor quota {spec.parent!r} is left out")
        return None
    if spec.tree_id not in (DEFAULT_TREE, parent_tree):
        _drop(
            name,
            topology,
            f"tree id {spec.tree_id!r} differs from parent quota {spec.parent!r}'s tree id "
            f"{parent_tree!r}",
        )
        return None
    topology.tree_of[name] = parent_tree
    return parent_tree


def _drop(name: str, topology: Topology, reason: str) -> None:
    spec = topology.quotas.pop(name)
    topology.problems.append(
        Problem(spec.ref, f"{reason}; the quota is left out of its tree", left_out=True)
    )
