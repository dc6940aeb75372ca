"""Transient API failures logged once per outage, not once per retry.

A person reading the logs while the API server is unreachable (or a connection silently dropped)
should see when the trouble began, with its cause, and when it ended, with its duration: one
WARNING when the first request of a loop fails for a transient reason (``kube.errors.is_retryable``:
timeouts, lost connections, throttling, conflicts, server errors) and one INFO when one succeeds
again. The failures in between, retried by the loop at its next rounds, are logged at DEBUG only.
A request refused for good (403, 422...) is not an outage: it is logged at WARNING each time, with
its subject, as it needs a person's attention.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from elasticquota.kube.errors import describe, is_retryable


class OutageLog:
    """The transient failures of one loop's API requests (``what``: e.g. "quota writes")."""

    def __init__(
        self, logger: logging.Logger, what: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger = logger
        self._what = what
        self._clock = clock
        #: Monotonic time of the first transient failure of the current outage (None: no outage).
        self.failing_since: float | None = None

    def failed(self, subject: str, error: BaseException) -> None:
        """A request about ``subject`` (e.g. ``namespace/name``) failed with ``error``."""
        if not is_retryable(error):
            self._logger.warning("%s failed for %s: %s", self._what, subject, describe(error))
        elif self.failing_since is None:
            self.failing_since = self._clock()
            self._logger.warning(
                "%s failing (%s: %s); retrying", self._what, subject, describe(error)
            )
        else:
            self._logger.debug("%s failed again for %s: %s", self._what, subject, describe(error))

    def succeeded(self) -> None:
        """A request succeeded: the outage, if any, is over."""
        if self.failing_since is not None:
            self._logger.info(
                "%s succeed again after %.1f s", self._what, self._clock() - self.failing_since
            )
            self.failing_since = None
