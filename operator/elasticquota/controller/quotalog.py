"""The memory's log of quota changes: which quota objects changed, in the order they did.

Every quota object key the memory stores, replaces or drops gets the number of its change
(``note``); what follows the quotas (the webhooks' catalog, ``controller.webhooks.memory``) keeps
the number it last read up to and asks for what changed after it (``since``), so a request costs
what changed, not a look at all 10,000 quotas. A key appears once, at its latest change: the log
is a dict kept in change order, the key moved to the end at each change.

Deleted keys stay until ``TOMBSTONES_KEPT`` more than the live quotas pile up; then they are
dropped (a cluster that makes a quota per CI run's namespace would grow the log for good), and
``forgotten`` is the latest change number dropped: a follower that last read before it drops what
it holds that the memory does not hold.
"""

from __future__ import annotations

from collections.abc import Collection

ObjectKey = tuple[str, str]

#: Deleted quotas the change log keeps beyond the live ones before it drops them (``forgotten``).
TOMBSTONES_KEPT = 1024


class QuotaChangeLog:
    """Quota object keys by the number of their latest change, oldest change first."""

    __slots__ = ("_changes", "forgotten", "sequence")

    def __init__(self) -> None:
        self._changes: dict[ObjectKey, int] = {}
        #: The number of the latest change (0: none yet).
        self.sequence = 0
        #: The latest change number dropped with its deleted key (0: none dropped).
        self.forgotten = 0

    def note(self, key: ObjectKey, live: Collection[ObjectKey]) -> None:
        """``key`` changed (stored, replaced or dropped); ``live``: the quota keys the memory
        holds now, whose entries are never dropped."""
        self.sequence += 1
        self._changes.pop(key, None)  # re-inserted last: the log stays in change order
        self._changes[key] = self.sequence
        if len(self._changes) > 2 * len(live) + TOMBSTONES_KEPT:
            for gone in [held for held in self._changes if held not in live and held != key]:
                self.forgotten = max(self.forgotten, self._changes.pop(gone))

    def since(self, sequence: int) -> list[tuple[ObjectKey, int]]:
        """The keys changed after change number ``sequence``, each with its change's number,
        newest first."""
        changed = []
        for key in reversed(self._changes):
            number = self._changes[key]
            if number <= sequence:
                break
            changed.append((key, number))
        return changed

    def __len__(self) -> int:
        return len(self._changes)

    def __contains__(self, key: object) -> bool:
        return key in self._changes
