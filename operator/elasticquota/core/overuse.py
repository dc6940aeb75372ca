"""How long each quota has used more than its runtime: the revocation timer (semantics §3.4).

A quota is due for revocation when its over-use has lasted strictly longer than the delay; the
timer then restarts, so that another full delay of continuous over-use is needed for the next round
(as the reference). Times are wall-clock epoch seconds because the start of an over-use is kept on
the quota object (annotation ``elasticquota.dev/over-used-since``): an operator restart during the
delay neither forgets it nor starts it over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from elasticquota.core.keys import EXT_PREFIX

ANNO_OVER_USED_SINCE = f"{EXT_PREFIX}/over-used-since"


def format_since(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_since(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(slots=True)
class OverUseTimer:
    """Per quota: since when it has been over its runtime without interruption."""

    delay: float
    since: dict[str, float] = field(default_factory=dict)

    def observe(self, quota: str, over_used: bool, now: float) -> bool:
        """Record one check; True when the quota is due for a revocation round now."""
        if not over_used:
            self.since.pop(quota, None)
            return False
        start = self.since.setdefault(quota, now)
        if now - start > self.delay:
            self.since[quota] = now
            return True
        return False
