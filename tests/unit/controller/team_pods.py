"""Raw pods of quota ``team`` in namespace ``ns``, and the state they go in, for the admission
gating tests.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import ADMISSION_GATE, LABEL_ALLOW_LENT, POD_LABEL_QUOTA
from elasticquota.core.solve.engine import EngineSettings


def team_quota(cpu: str = "4", annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Quota ``team`` of namespace ``ns``: min = max = ``cpu``, lending nothing."""
    metadata: dict[str, Any] = {
        "name": "team",
        "namespace": "ns",
        "labels": {LABEL_ALLOW_LENT: "false"},
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"metadata": metadata, "spec": {"min": {"cpu": cpu}, "max": {"cpu": cpu}}}


def team_of_four() -> ControllerState:
    """Synced state: quota ``team`` of exactly 4 cpu (min = max, lends nothing), node ``n1`` of
    8 cpu, no pods yet."""
    state = ControllerState.create(EngineSettings())
    state.on_quota(team_quota())
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    state.mark_synced()
    return state


def team_pod(
    name: str,
    cpu: str,
    priority: int = 0,
    *,
    gated: bool = False,
    node: str = "",
    phase: str = "",
    annotations: Mapping[str, str] | None = None,
    started: str = "",
) -> dict[str, Any]:
    """A pod requesting ``cpu``, held by our gate when ``gated``, Running on ``node`` when bound
    (Pending otherwise) unless ``phase`` says otherwise; ``started``: its ``status.startTime``."""
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": ADMISSION_GATE}]
    if node:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "labels": {POD_LABEL_QUOTA: "team"},
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    status = {"phase": phase or ("Running" if node else "Pending")}
    if started:
        status["startTime"] = started
    return {"metadata": metadata, "spec": spec, "status": status}
