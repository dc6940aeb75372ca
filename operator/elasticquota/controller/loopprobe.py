"""A probe of the event loop: how long something else held it.

Event intake, the webhooks, the Lease renewal and the tree loops share one event loop, so nothing
may hold it for long (the operator's budget is ~100 ms). The probe asks to be woken every
``period`` seconds and records how late it was woken (``elastic_quota_event_loop_lag_seconds``,
and the longest since start-up); a lag above ``warn_after`` is logged once per occurrence with
its length, so a profile can be taken where it happens.
"""

from __future__ import annotations

import asyncio
import logging

from elasticquota.controller.metrics import Metrics

logger = logging.getLogger(__name__)

#: Seconds between two wake-ups of the probe.
PERIOD = 0.05
#: A lag above this is worth a log line (the tree loops' and the webhooks' budget is 0.1 s).
WARN_AFTER = 1.0


async def probe_loop(
    metrics: Metrics, period: float = PERIOD, warn_after: float = WARN_AFTER
) -> None:
    """For ever: sleep ``period``, record how much later than asked the loop woke us."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(period)
        lag = max(0.0, loop.time() - asked - period)
        metrics.loop_lag(lag)
        if lag > warn_after:
            logger.warning("the event loop was held for %.2f s", lag)
