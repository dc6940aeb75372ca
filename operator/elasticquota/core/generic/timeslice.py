"""How long a stretch of synchronous work may hold the event loop before it yields.

Work cut into slices of a fixed number of items (quotas diffed, objects listed) holds the loop for
a time that depends on the machine: on a node whose cores the API server keeps busy the operator's
thread is descheduled mid-slice, and a slice that takes 50 ms on an idle machine took 0.5-1.9 s in
the cluster-scale benchmark's burst. A ``TimeSlice`` measures the stretch on the wall clock instead
(what the loop's other tasks wait for), so callers yield as soon as it has run for its budget,
whatever the item count. Pure: the caller does the awaiting.

Several tasks slice at once (a reader taking in its list, a tree's pass over its quotas, the
webhooks' catalog following them), and one turn of the event loop runs the next slice of each
before the loop probe's timer fires: with 20-ms slices the start at 100,000 pods held the loop for
0.10-0.13 s at a time, its thread running throughout. Slices of 5 ms keep a turn with four or
five of them within the 100-ms budget; a yield costs some 20-50 µs, under 1 % of a slice.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Seconds of synchronous work between two yields: a turn of the loop that runs one slice of each
#: task that slices stays well within the loop's 100-ms budget.
SLICE_BUDGET = 0.005


class TimeSlice:
    """A stopwatch over the current stretch of work: ``due()`` once it ran for ``budget``."""

    __slots__ = ("_budget", "_clock", "_started")

    def __init__(
        self, budget: float = SLICE_BUDGET, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._budget = budget
        self._clock = clock
        self._started = clock()

    def due(self) -> bool:
        """True when the stretch has run for its budget (time to yield, then ``restart``)."""
        return self._clock() - self._started >= self._budget

    def restart(self) -> None:
        """A new stretch starts now (after the yield)."""
        self._started = self._clock()
