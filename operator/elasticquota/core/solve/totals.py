"""What each tree's virtual root distributes, and the trees that have nothing to distribute.

A profile tree: its root quota's ``total-resource``. The default tree: all nodes' allocatable,
minus the profile trees' totals (unless their root ignores the default tree), minus what the
system and default quotas use.
"""

from __future__ import annotations

from collections.abc import Mapping

from elasticquota.core.keys import DEFAULT_QUOTA, DEFAULT_TREE, SYSTEM_QUOTA
from elasticquota.core.model.models import Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList, add, mask, subtract_clamped
from elasticquota.core.solve.accounting import Account, ExactSums
from elasticquota.core.tree.topology import Topology


def root_total(spec: Quota) -> ResourceList | None:
    """A profile tree root's ``total-resource``: only read on a quota labelled is-root=true."""
    return spec.total_resource if spec.is_root else None


def _take_out(total: ResourceList, amount: ResourceList) -> ResourceList:
    """``total - amount`` clamped at 0, on the keys of ``total`` only: subtracting never makes a
    resource that no node has present in the total (it would then be scaled as a total of 0)."""
    return subtract_clamped(total, mask(amount, total))


def profile_total(topology: Topology, tree_id: str) -> ResourceList:
    """The sum of the ``total-resource`` of a profile tree's root quotas."""
    total: ResourceList = {}
    for name in topology.top_level.get(tree_id, []):
        given = root_total(topology.quotas[name])
        if given is not None:
            total = add(total, given)
    return total


def default_total(
    topology: Topology, node_total: Mapping[str, int], reserved: ExactSums
) -> ResourceList:
    """The nodes' allocatable less the profile trees' totals and the reserved quotas' usage."""
    total = dict(node_total)
    for other in topology.top_level:
        if other == DEFAULT_TREE:
            continue
        for name in topology.top_level[other]:
            spec = topology.quotas[name]
            given = root_total(spec)
            if given is not None and not spec.ignore_default_tree:
                total = _take_out(total, given)
    for row, _name in enumerate((SYSTEM_QUOTA, DEFAULT_QUOTA)):
        total = _take_out(total, reserved.exact(Account.USED, row))
    return total


def tree_total(
    topology: Topology, tree_id: str, node_total: Mapping[str, int], reserved: ExactSums
) -> ResourceList:
    """What the virtual root of ``tree_id`` distributes."""
    if tree_id != DEFAULT_TREE:
        return profile_total(topology, tree_id)
    return default_total(topology, node_total, reserved)


def tree_problems(topology: Topology) -> list[Problem]:
    """A profile tree none of whose top-level quotas carries a total: its total is empty."""
    problems = []
    for tree_id, names in topology.top_level.items():
        if tree_id == DEFAULT_TREE:
            continue
        if not any(root_total(topology.quotas[name]) is not None for name in names):
            spec = topology.quotas[names[0]]
            problems.append(
                Problem(
                    spec.ref,
                    f"tree {tree_id!r} has no root quota (is-root=true) with a "
                    "total-resource annotation (is the ElasticQuotaProfile missing?); "
                    "the tree's total is empty",
                )
            )
    return problems
