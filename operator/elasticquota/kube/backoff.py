"""How long a reader (``kube.reflector``) waits before it tries again: exponential backoff with
jitter, as client-go's reflector does (800 ms doubling up to 30 s there; 10 s here, so that a
kind is watched again within seconds of the API server's return, at a cost of one request per
kind every 10 s or less while it fails).

A server that refuses requests (429 under API Priority and Fairness, a 5xx) or cannot be reached
must not be asked again at once: every failure in a row doubles the wait, from ``FIRST_DELAY`` up
to ``MAX_DELAY``, each wait shortened by up to ``JITTER`` of itself at random so that the readers
of several kinds and replicas that failed together do not come back together.

The waits start over after a watch that worked: one that delivered events (bookmarks included) or
stayed open ``HEALTHY_WATCH`` seconds. A ``410 Gone`` (the resourceVersion aged out of the
server's window) is routine after a long watch and relists at once; a 410 that comes again before
a watch has stayed open ``HEALTHY_WATCH`` seconds waits as a failure does (a server that answers
410 to every list or watch would otherwise be relisted from in a tight loop).
"""

from __future__ import annotations

import random
from collections.abc import Callable

#: Seconds waited after the first failure in a row (less the jitter).
FIRST_DELAY = 1.0
#: Seconds waited at most, however many failures in a row.
MAX_DELAY = 10.0
#: Part of a wait taken off at random (0.25: a wait of 8 s is 6 to 8 s).
JITTER = 0.25
#: Seconds a watch stays open to count as healthy whatever it delivered.
HEALTHY_WATCH = 10.0
#: Doublings at most (past it the wait is ``MAX_DELAY`` anyway; keeps the power small).
MAX_DOUBLINGS = 16


class Backoff:
    """The waits of one reader between its attempts (``draw``: a number in [0, 1), at random)."""

    def __init__(self, draw: Callable[[], float] = random.random) -> None:
        self._draw = draw
        #: Failures in a row since the waits last started over.
        self._failures = 0
        #: The next 410 relists at once (none came since the last long watch).
        self._expiry_is_routine = True

    def failed(self) -> float:
        """The wait after one more failure in a row."""
        base = min(MAX_DELAY, FIRST_DELAY * 2.0 ** min(self._failures, MAX_DOUBLINGS))
        self._failures += 1
        return base * (1 - JITTER * self._draw())

    def expired(self) -> float:
        """The wait before the relist a 410 calls for: none for the first since a long watch,
        else as after a failure."""
        if self._expiry_is_routine:
            self._expiry_is_routine = False
            return 0.0
        return self.failed()

    def watch_ended(self, *, events: int, lasted: float) -> None:
        """A watch that was open for ``lasted`` seconds and delivered ``events`` ended (in any
        way): if it worked, the waits start over."""
        if events or lasted >= HEALTHY_WATCH:
            self._failures = 0
        if lasted >= HEALTHY_WATCH:
            self._expiry_is_routine = True
