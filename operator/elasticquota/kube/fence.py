"""The write fence: a replica writes only while it holds the leader Lease, renewed in time.

``kube.lease.LeaderElector`` opens the ``Fence`` at each renewal that succeeded (from the start of
its attempt, for the renew deadline) and closes it when the Lease is lost or released; every write
of the operator asks it first (``kube.client``) and is abandoned with ``NotLeadingError`` when it is
closed, so a replica that stopped renewing stops writing at that very moment, whatever its
requests are doing. The loops catch ``NotLeadingError`` as "not the active replica any more".
"""

from __future__ import annotations

import time


class NotLeadingError(Exception):
    """A write refused by the fence: this replica holds no Lease renewed within the deadline."""


class Fence:
    """Whether this replica may write now: it holds the Lease and renewed it within the renew
    deadline. Closes by itself when the deadline passes (nothing has to happen for that)."""

    def __init__(self, renew_deadline: float) -> None:
        self.renew_deadline = renew_deadline
        self._open_until = float("-inf")

    def renewed(self, started: float) -> None:
        """A renewal (or acquisition) that started at ``started`` (``time.monotonic``) succeeded."""
        self._open_until = started + self.renew_deadline

    def close(self) -> None:
        self._open_until = float("-inf")

    def remaining(self) -> float:
        """Seconds until the fence closes (0 when closed)."""
        return max(0.0, self._open_until - time.monotonic())

    def is_fresh(self) -> bool:
        return self.remaining() > 0.0

    def admit(self, what: str) -> float:
        """The seconds a write (``what``, for the error) may take at most; ``NotLeadingError`` if it
        may not be sent at all."""
        budget = self.remaining()
        if budget <= 0.0:
            raise NotLeadingError(f"{what}: not sent, this replica holds no fresh leader Lease")
        return budget
