"""The observability settings: the health and metrics server, the log, the loop watchdog.

The HTTP server of /healthz, /readyz and /metrics (its port and address), the log level, after how
long a held event loop is reported with its stack, and how many users and groups of a quota get
series of their own in the user metrics.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from elasticquota.settings.values import LOG_LEVELS, HostName, Port


class ObservabilitySettings(BaseModel):
    """What the operator tells about itself: probes, metrics, logs."""

    metrics_port: Port = 8080
    """Port of the HTTP server with /healthz, /readyz (and /metrics); 0 disables it."""

    metrics_address: HostName = "0.0.0.0"
    """Listen address of that server: all interfaces by default, as a pod's probes need; on a
    pod with ``hostNetwork`` (the node's interfaces), e.g. the node's internal address."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    """Python logging level name (any case)."""

    loop_stall_report_after: float = Field(default=0.5, ge=0.02, le=60)
    """Seconds the event loop may be held before a watchdog thread logs, once per stall, the stack
    of the code that holds it (WARNING ``the event loop has been held for ...``). The loop's budget
    is 0.1 s; 0.5 s keeps the log quiet in a healthy cluster, 0.1 s finds every stall above the
    budget (``make bench-scale`` runs with it)."""

    user_metrics_max_per_quota: int = Field(default=20, ge=0, le=10000)
    """At most this many users, and this many groups, per quota get series of their own in the
    ``elastic_quota_user_*`` and ``elastic_quota_group_*`` metrics (those with the most pods);
    the others are summed under ``user="(other)"`` (``group="(other)"``). 0: only the sums."""

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_in_any_case(cls, value: Any) -> Any:
        known = isinstance(value, str) and value.upper() in LOG_LEVELS
        return value.upper() if known else value
