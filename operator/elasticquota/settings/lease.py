"""The lease settings: the leader election between replicas (``kube.lease``).

One replica holds a coordination.k8s.io Lease and is the only one that writes; the others look at
the Lease every ``lease_retry_period`` and take over once it has not been renewed for
``lease_duration``. The holder stops writing when it could not renew for ``lease_renew_deadline``,
before a standby can take over. The rules between these three are checked here; the Lease's
namespace defaults to the reserved namespace (``Settings.effective_lease_namespace``).
"""

from __future__ import annotations

import os
import socket
from typing import Self

from pydantic import BaseModel, Field, model_validator

from elasticquota.settings.values import DNS_SUBDOMAIN, HOUR, MAX_NAME, NamespaceName


def _default_identity() -> str:
    """Who this replica is in the leader Lease: the pod name (``POD_NAME``, from the downward API),
    else the host name (a pod's host name is its name). Stable across restarts of the container,
    so that a restarted replica finds the Lease under its own name and takes it back at once."""
    return os.environ.get("POD_NAME") or socket.gethostname()


class LeaseSettings(BaseModel):
    """The leader Lease and its timings."""

    lease_name: str = Field(
        default="elastic-quota-operator", min_length=1, max_length=MAX_NAME, pattern=DNS_SUBDOMAIN
    )
    """Name of the coordination.k8s.io Lease that elects the active replica."""

    lease_namespace: NamespaceName | None = None
    """Namespace of the Lease; unset: the reserved namespace."""

    lease_duration: float = Field(default=15.0, ge=1, le=HOUR)
    """Seconds without renewal after which a standby replica takes over."""

    lease_renew_deadline: float | None = Field(default=None, ge=0.01, le=3600)
    """Seconds the active replica may go without renewing the Lease before it stops every write
    (client-go's renew deadline); each request of the election is bounded by it too. Below
    lease_duration, so that the old holder has stopped before a standby can take over, and above
    lease_retry_period. Unset: two thirds of lease_duration (10 s for the default 15 s)."""

    lease_retry_period: float = Field(default=0.5, ge=0.01, le=60)
    """Seconds between a standby replica's looks at the Lease (client-go's retry period): it takes
    over at most about two of these after the Lease expired. Below half the lease duration."""

    identity: str = Field(default_factory=_default_identity, min_length=1, max_length=MAX_NAME)
    """This replica's identity in the Lease; unset: ``POD_NAME``, else the host name. Replicas on
    one machine need identities of their own (two processes of one identity both hold the Lease)."""

    @property
    def effective_lease_renew_deadline(self) -> float:
        """``lease_renew_deadline``, or two thirds of the lease duration."""
        if self.lease_renew_deadline is not None:
            return self.lease_renew_deadline
        return self.lease_duration * 2 / 3

    @model_validator(mode="after")
    def _retry_within_the_lease(self) -> Self:
        if self.lease_retry_period * 2 > self.lease_duration:
            raise ValueError(
                f"lease_retry_period ({self.lease_retry_period:g} s) must be at most half of "
                f"lease_duration ({self.lease_duration:g} s)"
            )
        return self

    @model_validator(mode="after")
    def _renew_deadline_within_the_lease(self) -> Self:
        deadline = self.effective_lease_renew_deadline
        if not self.lease_retry_period < deadline < self.lease_duration:
            raise ValueError(
                f"lease_renew_deadline ({deadline:g} s) must be below "
                f"lease_duration ({self.lease_duration:g} s) and above lease_retry_period "
                f"({self.lease_retry_period:g} s)"
            )
        return self
