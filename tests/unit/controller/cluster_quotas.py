"""Quotas that exist both as objects of the in-memory cluster and in the memory, for the
reconciling tests (only what exists as an object is written), and the tree they go to by default.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from fake_cluster import FakeCluster

DEFAULT = keys.DEFAULT_TREE


def add_quota(state: ControllerState, cluster: FakeCluster, body: dict[str, Any]) -> None:
    cluster.store(body)
    state.on_quota(body)
