"""One round of a gate controller over the ``team_pods`` state, and the pods of a preemption
that needs two victims, for the admission gating tests.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

import asyncio
from typing import Any

from team_pods import team_pod as pod

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.settings import Settings


async def stepped(
    world: ControllerState, cluster: Cluster, *pods: dict[str, Any]
) -> GateController:
    """A gate controller after one round over ``world`` and these pods."""
    for body in pods:
        world.on_pod(body)
    gate = GateController(LoopContext(world, cluster, Settings(), asyncio.Event()))
    await gate.step()
    return gate


def new_needs_both_small_pods() -> list[dict[str, Any]]:
    """``new`` (priority 5) waits; only ``low-a`` and ``low-b`` gone together make its room."""
    return [
        pod("low-a", "1", 0, node="n1"),
        pod("low-b", "1", 0, node="n1"),
        pod("mid", "2", 0, node="n1"),
        pod("new", "2", 5, gated=True),
    ]
