"""One revocation round on a clock the test moves: the over-use starts at one check, and the
check a delay later makes the round (for the controller tests that look at what a round does).

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

import asyncio
from typing import Any

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.settings import Settings


async def delayed_round(
    world: ControllerState, cluster: Cluster, delay: float, **overrides: Any
) -> None:
    """Two checks of a revocation controller (``revocation_delay`` ``delay``, other settings
    ``overrides``) over ``world``: the first sees the over-use start, the second, ``delay`` and a
    second later, the round."""
    now = [100.0]
    settings = Settings(revocation_delay=delay, revocation_interval=1.0, **overrides)
    context = LoopContext(world, cluster, settings, asyncio.Event())
    controller = RevocationController(context, clock=lambda: now[0])
    await controller.check_once()  # the over-use starts
    now[0] += delay + 1
    await controller.check_once()  # a round is due
