"""Level-based reconciling: which writes a tree needs (``pending_writes``), found in slices.

Rules (controller/reconcile/writer.py): only quotas that exist as objects and differ from their
result are written, each with the diff of its object; the sliced diff finds the same writes and
yields to other tasks between slices, and within one once a slice has used its time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from cluster_quotas import DEFAULT, add_quota
from yielding import yields_during

from elasticquota.controller.reconcile.writer import (
    moved_in_slices,
    pending_writes,
    pending_writes_in_slices,
)
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.decisions.diff import quota_write

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster


def test_only_quotas_that_exist_as_objects_are_written(world: ControllerState) -> None:
    results = world.engine.solve_tree(DEFAULT)
    assert {keys.ROOT_QUOTA, keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA} <= set(results)
    assert {change.name for change in pending_writes(world, results)} == {"a", "b"}


def test_pending_writes_are_the_diff_of_each_object(world: ControllerState) -> None:
    results = world.engine.solve_tree(DEFAULT)
    current = world.quotas[("team", "a")]
    expected = quota_write(results["a"], current.annotations, current.status)
    assert next(c for c in pending_writes(world, results) if c.name == "a") == expected


@pytest.fixture
def seven(world: ControllerState, cluster: FakeCluster, k8s: Bodies) -> None:
    """Seven more quotas, q0 to q6, in ``world``'s default tree."""
    for index in range(7):
        add_quota(world, cluster, k8s.quota(f"q{index}", max={"cpu": "1"}))


async def test_the_sliced_diff_yields_between_slices_and_finds_the_same_writes(
    world: ControllerState, seven: None
) -> None:
    results = world.engine.solve_tree(DEFAULT)
    sliced, yields = await yields_during(pending_writes_in_slices(world, results, size=3))
    assert sliced == pending_writes(world, results)
    assert len(results) >= 9
    assert yields >= 2  # other tasks ran between the slices


async def test_the_changed_results_are_sorted_out_in_slices_of_time(
    world: ControllerState, k8s: Bodies, seven: None
) -> None:
    before = dict(world.engine.solve_tree(DEFAULT))
    world.on_pod(k8s.pod("p", quota="q3", requests={"cpu": "1"}, node="n1", phase="Running"))
    after = world.engine.solve_tree(DEFAULT)
    moved, yields = await yields_during(moved_in_slices(list(after), before, after, budget=0.0))
    assert "q3" in moved and "q0" not in moved
    assert yields >= len(after) // 2  # no time to spare: yields all along


async def test_the_sliced_diff_yields_once_a_slice_has_used_its_time(
    world: ControllerState, seven: None
) -> None:
    results = world.engine.solve_tree(DEFAULT)
    work = pending_writes_in_slices(world, results, size=1000, budget=0.0)
    sliced, yields = await yields_during(work)
    assert sliced == pending_writes(world, results)
    assert yields >= len(results) // 2  # no time to spare: yields all along (by count: none)
