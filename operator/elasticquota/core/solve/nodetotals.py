"""The cluster's nodes and the exact sum of their allocatable resources.

The default tree's total is this sum (less what the reserved quotas hold). It is kept exact under
node events: adding then removing a node leaves the total as if the node had never been seen, with
exactly the resource keys of the current nodes (a resource no node has is absent, not zero), as a
fresh engine loaded with the same nodes would have it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from elasticquota.core.model.models import NodeInfo
from elasticquota.core.quantities.resources import ResourceList


class NodeTotals:
    """The current nodes by name and the sum of their allocatable."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._total: ResourceList = {}
        #: How many nodes have each resource: a resource no node has is absent from the total.
        self._nodes_with: dict[str, int] = {}

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The current nodes (read-only view)."""
        return MappingProxyType(self._nodes)

    @property
    def total(self) -> ResourceList:
        """The exact sum over the current nodes (the live mapping: callers do not change it)."""
        return self._total

    def upsert(self, node: NodeInfo) -> None:
        old = self._nodes.get(node.name)
        if old is not None:
            self._count(old, -1)
        self._nodes[node.name] = node
        self._count(node, +1)

    def delete(self, name: str) -> bool:
        """Forget a node; False for an unknown one (nothing changed)."""
        old = self._nodes.pop(name, None)
        if old is None:
            return False
        self._count(old, -1)
        return True

    def _count(self, node: NodeInfo, sign: int) -> None:
        for name, value in node.allocatable.items():
            self._total[name] = self._total.get(name, 0) + sign * value
            self._nodes_with[name] = self._nodes_with.get(name, 0) + sign
            if self._nodes_with[name] == 0:
                del self._nodes_with[name]
                del self._total[name]
