"""What every writing loop of the operator is given, in one object built by the runner.

The reconciler, the profile controller, revocation and admission gating each read the memory
(``ControllerState``), write through the ``Cluster`` port (``controller.cluster``), follow the
settings, act only while this replica holds the Lease (``leading`` is set) and feed the metrics.
``LoopContext`` carries the five; ``WritingLoop`` unpacks them for the loops that share them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.settings import Settings


@dataclass(frozen=True, slots=True)
class LoopContext:
    """The memory, the cluster, the settings, the Lease held (set) and the metrics."""

    state: ControllerState
    cluster: Cluster
    settings: Settings
    leading: asyncio.Event
    metrics: Metrics = field(default_factory=Metrics)


class WritingLoop:
    """A loop that reads the memory and writes to the cluster while the replica leads."""

    def __init__(self, context: LoopContext) -> None:
        self._state = context.state
        self._cluster = context.cluster
        self._settings = context.settings
        self._leading = context.leading
        self._metrics = context.metrics
