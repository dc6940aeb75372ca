"""How long each quota has used more than its runtime: the revocation timer.

A quota is due for revocation when its over-use has lasted strictly longer than the delay; the
round clock then restarts, so that another full delay of continuous over-use is needed for the next
round (as the reference). The start of the over-use itself does not move: it is kept on the quota
object (annotation ``elasticquota.dev/over-used-since``), written when an over-use begins and
removed when it ends, never at a round, so a quota that stays over-used with nothing to evict is
not rewritten every delay. Times are wall-clock epoch seconds because of that annotation: an
operator restart during the delay neither forgets the over-use nor starts it over.
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
    """Per quota: since when it has been over its runtime without interruption, and when its last
    revocation round was.

    ``since`` is the moment the over-use began and stays so while it lasts (it is what the
    quota's annotation shows); a round restarts only the round clock (``last_round``), so that
    another full delay of continuous over-use is needed for the next round, as in the reference,
    without rewriting the annotation at every round.
    """

    delay: float
    since: dict[str, float] = field(default_factory=dict)
    last_round: dict[str, float] = field(default_factory=dict)

    def restore(self, quota: str, since: float) -> None:
        """An over-use that began before a restart keeps its start. The rounds it had are not
        known: the next one is due as soon as the over-use has lasted longer than the delay (a
        round evicts nothing twice: the pods it evicted are terminating, which no round counts
        or chooses)."""
        self.since[quota] = since
        self.last_round.pop(quota, None)

    def forget(self, quota: str) -> None:
        """The quota is gone (deleted, or left out of its tree): no over-use to time."""
        self.since.pop(quota, None)
        self.last_round.pop(quota, None)

    def due_again_by(self, quota: str, when: float) -> None:
        """The quota's next round comes at ``when`` at the latest (if its over-use lasts): a
        round that spared pods for their minimum runtime is taken up when the first may go."""
        if quota in self.since:
            start = self.last_round.get(quota, self.since[quota])
            self.last_round[quota] = min(start, when - self.delay)

    def observe(self, quota: str, over_used: bool, now: float) -> bool:
        """Record one check; True when the quota is due for a revocation round now."""
        if not over_used:
            self.forget(quota)
            return False
        start = self.last_round.get(quota, self.since.setdefault(quota, now))
        if now - start > self.delay:
            self.last_round[quota] = now
            return True
        return False
