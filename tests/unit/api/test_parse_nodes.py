"""Nodes to models: what a node offers, whether it is ready or schedulable, and a problem for a
bad value or a node being deleted."""

from __future__ import annotations

from typing import Any

import pytest
from parse_checks import GI, clean

from elasticquota.api.parse import parse_node
from elasticquota.core.model.models import NodeInfo

# -- Node -------------------------------------------------------------------------------------


def node_raw(
    *, status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None, **metadata: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"pool": "gpu"}, **metadata},
        "spec": spec or {},
        "status": status
        if status is not None
        else {
            "allocatable": {"cpu": "16", "memory": "64Gi"},
            "capacity": {"cpu": "32"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def clean_node(raw: dict[str, Any]) -> NodeInfo:
    return clean(parse_node, raw, NodeInfo)


def test_a_node_offers_its_allocatable() -> None:
    node = clean_node(node_raw())
    assert node.allocatable == {"cpu": 16_000, "memory": 64 * GI}
    assert node.labels == {"pool": "gpu"}
    assert (node.ready, node.unschedulable) == (True, False)


def test_capacity_is_used_when_allocatable_is_unset() -> None:
    node = clean_node(node_raw(status={"capacity": {"cpu": "32", "pods": "110"}}))
    assert node.allocatable == {"cpu": 32_000, "pods": 110}


def test_a_node_without_a_ready_condition_is_not_ready() -> None:
    """As Kubernetes' IsNodeReady: without a Ready condition a node is not ready."""
    assert clean_node(node_raw(status={"allocatable": {"cpu": "16"}})).ready is False


def test_a_node_without_resources_offers_nothing() -> None:
    assert clean_node(node_raw(status={})).allocatable == {}


@pytest.mark.parametrize(
    ("status", "ready"), [("True", True), ("False", False), ("Unknown", False)]
)
def test_the_ready_condition_is_read(status: str, ready: bool) -> None:
    raw = node_raw(
        status={
            "allocatable": {"cpu": "1"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": status},
            ],
        }
    )
    assert clean_node(raw).ready is ready


def test_unschedulable_is_read() -> None:
    assert clean_node(node_raw(spec={"unschedulable": True})).unschedulable


def test_a_node_being_deleted_is_not_counted() -> None:
    node, problems = parse_node(node_raw(deletionTimestamp="2026-11-20T08:00:00Z"))
    assert node is None
    assert [(p.object, p.message) for p in problems] == [
        ("Node /n1", "node is being deleted; not counted")
    ]


def test_a_bad_allocatable_quantity_leaves_the_node_out() -> None:
    node, problems = parse_node(node_raw(status={"allocatable": {"cpu": "sixteen"}}))
    assert node is None
    assert problems[0].object == "Node /n1"
    assert problems[0].message.startswith("status.allocatable.cpu: ")
    assert problems[-1].message == "the node is not counted"
