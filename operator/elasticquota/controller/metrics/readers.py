"""The readers' state at scrape time: is each kind's watch connected, since when not, relists.

A reader that stays disconnected means changes of its kind do not reach memory: the replica stops
being ready (``/readyz``, ``elastic_quota_ready``) and these series say which kind and how long. A
watch whose connection froze counts as disconnected once it outlived the server's end of it, since
the last bytes it carried (``ReaderHealth.blind_since``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from elasticquota.controller.metrics.names import (
    WATCH_CONNECTED,
    WATCH_DOWN_SECONDS,
    WATCH_RELISTS,
)

if TYPE_CHECKING:
    from elasticquota.controller.state import ControllerState


class ReaderCollector:
    """One series per kind: connected (1/0), seconds disconnected, complete lists so far."""

    def __init__(self, state: ControllerState) -> None:
        self._state = state

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(WATCH_CONNECTED, _CONNECTED_HELP, labels=["kind"])
        yield GaugeMetricFamily(WATCH_DOWN_SECONDS, _DOWN_HELP, labels=["kind"])
        yield CounterMetricFamily(WATCH_RELISTS, _RELISTS_HELP, labels=["kind"])

    def collect(self) -> Iterator[Metric]:
        now = time.monotonic()
        connected = GaugeMetricFamily(WATCH_CONNECTED, _CONNECTED_HELP, labels=["kind"])
        down = GaugeMetricFamily(WATCH_DOWN_SECONDS, _DOWN_HELP, labels=["kind"])
        relists = CounterMetricFamily(WATCH_RELISTS, _RELISTS_HELP, labels=["kind"])
        for kind, health in sorted(self._state.readers.items()):
            connected.add_metric([kind], int(health.connected and not health.stalled(now)))
            since = health.blind_since(now)
            down.add_metric([kind], 0.0 if since is None else max(0.0, now - since))
            relists.add_metric([kind], health.relists)
        yield connected
        yield down
        yield relists


_CONNECTED_HELP = (
    "1 while the kind's watch is connected, else 0 (the first list, a list after a failure, "
    "reconnecting, down, or open past the server's end of it: a frozen connection); a relist "
    "after a routine 410 keeps it 1"
)
_DOWN_HELP = (
    "Seconds the kind's watch has been disconnected or known dead, since it last carried data "
    "(0 while connected)"
)
_RELISTS_HELP = "Complete lists of the kind (start-up, then expired resourceVersions)"
