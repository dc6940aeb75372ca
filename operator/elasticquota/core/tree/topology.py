"""Quota trees from a flat set of quotas: which quotas are valid, who is whose child, which tree.

A quota that breaks a structural rule (a name another quota owns, missing parent, parent not marked
``is-parent``, a cycle, a tree id different from its parent's) is left out of its tree together with
its descendants, and a ``Problem`` names it and the rule. Every other quota is kept: one broken
quota never stops the rest from being computed.

A quota whose parent is gone (deleted while it had children, or no longer marked ``is-parent``) is
an *orphan*: it is not re-homed under the root, it is left out, says so ("orphaned: ..."), and its
pods count against the default quota until its parent is back or its parent label changes. Its
descendants are orphans too. A parent that exists but is left out for its own problems (a bad
spec: the parser's) is named as such ("orphaned: parent quota 'dept' is left out"), not as absent;
so is the default or system quota named as a parent ("is a reserved quota, which cannot have
children").

Quota names are global. Of the quotas sharing a name, one owns it (``name_order``): the one the
operator recorded as the owner, else the one that owned it in the previous topology, else the
oldest (creation time, then uid); the others are left out, and pods of that name keep counting
against the owner. A newcomer never takes a name (nor the pods) of a quota that exists.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from elasticquota.core.keys import DEFAULT_QUOTA, DEFAULT_TREE, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import Problem
from elasticquota.core.model.quota import Quota

#: What happens to a quota left out for its place in the tree (and to its pods): said in every
#: such problem, so that the Event, ``plan`` and ``explain`` all tell where the pods went.
LEFT_OUT = (
    f"the quota is left out of its tree and its pods count against {DEFAULT_QUOTA} until it is "
    "fixed"
)


@dataclass(slots=True)
class Topology:
    """The valid quotas, arranged in trees, and the problems found on the way."""

    quotas: dict[str, Quota] = field(default_factory=dict)
    tree_of: dict[str, str] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    #: Top-level quotas (children of the virtual root) per tree id, sorted by name.
    top_level: dict[str, list[str]] = field(default_factory=dict)
    #: The system and default quotas as given (None: not present, reference defaults apply).
    reserved: dict[str, Quota] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The owner of every quota name (valid or not, reserved ones included): the next topology
    #: keeps each name with its owner (``name_order``).
    owners: dict[str, Quota] = field(default_factory=dict)
    #: The owners of the names that several quotas share.
    contested: dict[str, Quota] = field(default_factory=dict)

    def trees(self) -> list[str]:
        """Every tree id with at least one quota, plus the default tree, sorted."""
        return sorted({DEFAULT_TREE, *self.top_level})

    def owner_namespace(self, name: str) -> str | None:
        """The namespace of the quota that owns ``name`` (None when no quota has it)."""
        owner = self.owners.get(name)
        return None if owner is None else owner.namespace

    def unrecorded_owners(self) -> list[Quota]:
        """Owners of a name other quotas share that do not carry their ownership record yet
        (``elasticquota.dev/name-owner``), by name: the controller writes it, so that the name
        stays with them across restarts."""
        return [
            spec
            for _, spec in sorted(self.contested.items())
            if spec.uid and not spec.holds_name_record
        ]

    def path_to_root(self, name: str) -> list[str]:
        """``[name, parent, ..., top-level quota]`` (the virtual root excluded): the levels whose
        user and group limits a pod of ``name`` counts against."""
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


def build_topology(
    specs: Iterable[Quota],
    previous_owners: Mapping[str, Quota] | None = None,
    holders: Iterable[Quota] = (),
) -> Topology:
    """Validate the structure of a set of quotas and arrange the valid ones in trees.

    ``previous_owners``: the previous topology's ``owners``: a name shared by several quotas stays
    with the one that owned it (``name_order``). ``holders``: quotas whose spec is unusable (left
    out, reported by the parser): they are in no tree, but still own their names.
    """
    topology = Topology()
    candidates = _unique_candidates(specs, topology, previous_owners or {}, holders)
    # Names whose quota exists but is left out for its own problems (a bad spec): its children
    # are told so, not that it does not exist.
    held = set(topology.owners) - set(candidates) - set(topology.reserved)
    verdicts: dict[str, str | None] = {}
    for name in sorted(candidates):
        _judge(name, candidates, verdicts, held)
    for name in sorted(candidates):
        reason = verdicts[name]
        if reason is None:
            topology.quotas[name] = candidates[name]
        else:
            topology.problems.append(
                Problem(candidates[name].ref, f"{reason}; {LEFT_OUT}", left_out=True)
            )
    _assign_trees(topology)
    return topology


def _unique_candidates(
    specs: Iterable[Quota],
    topology: Topology,
    previous: Mapping[str, Quota],
    holders: Iterable[Quota],
) -> dict[str, Quota]:
    """Non-reserved quotas by name: of the quotas sharing a name, the owner (``name_order``); a
    name owned by a quota with an unusable spec has no candidate.

    The system and default quotas follow the same rule and go to ``topology.reserved``.
    """
    by_name: dict[str, list[Quota]] = {}
    unusable: set[tuple[str, str]] = set()  # (namespace, name): a holder is never also a spec
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    for holder in holders:
        by_name.setdefault(holder.name, []).append(holder)
        unusable.add((holder.namespace, holder.name))
    by_name.pop(ROOT_QUOTA, None)  # the virtual root: its object carries no spec the engine uses
    candidates: dict[str, Quota] = {}
    for name, group in sorted(by_name.items()):  # problems in name order, whatever the input
        if len(group) > 1:
            group.sort(key=name_order(previous.get(name)))
        owner = group[0]
        topology.owners[name] = owner
        if (owner.namespace, owner.name) in unusable:
            pass  # the owner's own problems say why it is left out; the name stays its own
        elif name in (SYSTEM_QUOTA, DEFAULT_QUOTA):
            topology.reserved[name] = owner
        else:
            candidates[name] = owner
        if len(group) > 1:
            topology.contested[name] = owner
        for duplicate in group[1:]:
            _report_duplicate(owner, duplicate, topology)
    return candidates


def name_order(
    held_by: Quota | None,
) -> Callable[[Quota], tuple[bool, bool, str, str, str]]:
    """The sort key that puts the owner of a name first among the quotas that share it.

    1. the quota the operator recorded as the owner (``elasticquota.dev/name-owner`` holding its
       own uid): the owner keeps its name across restarts;
    2. the quota that owned the name in the previous topology (``held_by``, the same object):
       a newcomer never takes a name while its owner exists;
    3. the older by creation time (a cold start without a record);
    4. on an exact tie (creation times have a one-second resolution), the lower uid, then the
       namespace: deterministic, the same on every replica.
    """

    def key(spec: Quota) -> tuple[bool, bool, str, str, str]:
        held = held_by is not None and _same_object(spec, held_by)
        return (
            not spec.holds_name_record,
            not held,
            spec.created or "~",
            spec.uid or "~",
            spec.namespace,
        )

    return key


def _same_object(spec: Quota, other: Quota) -> bool:
    return spec.namespace == other.namespace and spec.uid == other.uid


def _report_duplicate(owner: Quota, duplicate: Quota, topology: Topology) -> None:
    """The newcomer is left out; on a creation-time tie both hear about the other."""
    name = owner.name
    tie = bool(owner.created) and owner.created == duplicate.created
    same_second = (
        f" (both were created at {owner.created}: the name stays with the quota that holds it, "
        "else with the lower uid)"
        if tie
        else ""
    )
    topology.problems.append(
        Problem(
            duplicate.ref,
            f"quota name {name!r} is already used by {owner.ref}{same_second}; quota names must "
            "be unique across namespaces; the quota is left out of its tree",
            left_out=True,
        )
    )
    if tie:
        topology.problems.append(
            Problem(
                owner.ref,
                f"quota name {name!r} is also used by {duplicate.ref}, created in the same second "
                f"({owner.created}); this quota keeps the name and {duplicate.ref} is left out "
                "of its tree",
            )
        )


def _absent(parent: str, held: Collection[str]) -> str:
    """Why ``parent`` is no candidate, as its children are told: a reserved quota other than the
    root (it exists, but has no children), one left out for its own problems, or none."""
    if parent in (SYSTEM_QUOTA, DEFAULT_QUOTA):
        return "is a reserved quota, which cannot have children"
    return "is left out" if parent in held else "does not exist"


def _judge(
    name: str,
    candidates: Mapping[str, Quota],
    verdicts: dict[str, str | None],
    held: Collection[str],
) -> None:
    """Decide whether ``name`` and its ancestors are valid (None) or why not (a message);
    ``held``: names of quotas that exist but are left out (their own problems say why)."""
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
            verdicts[current] = f"orphaned: parent quota {parent!r} {_absent(parent, held)}"
            break
        if not candidates[parent].is_parent:
            verdicts[current] = (
                f"orphaned: parent quota {parent!r} is not marked quota.scheduling.koordinator.sh/"
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
            else f"orphaned: ancestor quota {candidates[child].parent!r} is left out"
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
        _drop(name, topology, f"orphaned: ancestor quota {spec.parent!r} is left out")
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
    topology.problems.append(Problem(spec.ref, f"{reason}; {LEFT_OUT}", left_out=True))
