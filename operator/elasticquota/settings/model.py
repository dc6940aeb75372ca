"""``Settings``: the groups of settings assembled into the knobs of ``elastic-quota run``.

Each group (``cluster``, ``engine``, ``revocation``, ``gating``, ``userlimits``,
``observability``, ``lease``, ``webhooks``) is a pydantic model holding its fields and the rules
among them; ``Settings`` inherits them all (pydantic collects the fields and validators of model
bases) and adds where the values come from (the ``ELASTIC_QUOTA_*`` environment, then the
command line) and the rules between groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from elasticquota.settings.cluster import ClusterSettings
from elasticquota.settings.engine import EngineSettings
from elasticquota.settings.gating import GatingSettings
from elasticquota.settings.lease import LeaseSettings
from elasticquota.settings.observability import ObservabilitySettings
from elasticquota.settings.revocation import RevocationSettings
from elasticquota.settings.userlimits import UserLimitSettings
from elasticquota.settings.webhooks import WebhookSettings


class Settings(
    WebhookSettings,
    LeaseSettings,
    ObservabilitySettings,
    UserLimitSettings,
    GatingSettings,
    RevocationSettings,
    EngineSettings,
    ClusterSettings,
    BaseSettings,
):
    """Knobs of ``elastic-quota run``.

    pydantic lists the fields of the last base first: the groups are named in reverse so that the
    fields (and the refused settings of one error message) come in the order cluster, engine,
    revocation, gating, user limits, observability, lease, webhooks.
    """

    model_config = SettingsConfigDict(
        env_prefix="ELASTIC_QUOTA_", extra="ignore", allow_inf_nan=False
    )

    @property
    def effective_lease_namespace(self) -> str:
        """``lease_namespace``, else the reserved namespace."""
        return self.lease_namespace or self.reserved_namespace

    @model_validator(mode="after")
    def _two_servers_two_ports(self) -> Self:
        if self.metrics_port and self.metrics_port == self.webhook_port:
            raise ValueError(
                f"metrics_port and webhook_port are both {self.metrics_port}: two servers cannot "
                "listen on one port"
            )
        return self

    @classmethod
    def from_sources(cls, overrides: Mapping[str, Any] | None = None) -> Settings:
        """Defaults, then the environment, then explicit (command-line) overrides (validated)."""
        values = {key: value for key, value in (overrides or {}).items() if value is not None}
        return cls(**values)
