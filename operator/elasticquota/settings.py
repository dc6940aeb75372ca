"""The operator's settings, in one typed place: environment (``ELASTIC_QUOTA_*``) and CLI flags.

Every field documents its unit and default. The command line overrides the environment, which
overrides the defaults (``Settings.from_sources``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE


def _default_identity() -> str:
    """Who this replica is in the leader Lease: the pod name (hostname) and the process id."""
    return f"{socket.gethostname()}-{os.getpid()}"


class Settings(BaseSettings):
    """Knobs of ``elastic-quota run``."""

    model_config = SettingsConfigDict(env_prefix="ELASTIC_QUOTA_", extra="ignore")

    kubeconfig: str | None = None
    """Path of a kubeconfig; unset: $KUBECONFIG, then the in-cluster service account."""

    reserved_namespace: str = DEFAULT_RESERVED_NAMESPACE
    """Namespace of the reserved quotas (root, system, default), created at start-up if missing."""

    scale_min_quota: bool = True
    """Scale mins down when a level's available amount is below their sum (Koordinator default)."""

    reconcile_interval: float = Field(default=1.0, gt=0)
    """Seconds: each tree is solved and written at most once per interval (so at most one write
    per quota per interval)."""

    profile_debounce: float = Field(default=1.0, ge=0)
    """Seconds to wait after a node or profile change before recomputing profile root quotas
    (the reference polls every 10 s instead)."""

    revocation_delay: float = Field(default=120.0, ge=0)
    """Seconds a quota may stay above its runtime before its pods are revoked."""

    revocation: bool = True
    """Evict pods of quotas that stay above their runtime (Koordinator: monitorAllQuotas, off
    by default there; on here: without a custom scheduler it is how borrowed resources return)."""

    revoke_default_quota: bool = False
    """Also revoke pods of koordinator-default-quota (never those of the system quota)."""

    revocation_interval: float = Field(default=1.0, gt=0)
    """Seconds between over-use checks (Koordinator: revokePodInterval)."""

    eviction_rate: float = Field(default=5.0, gt=0)
    """At most this many evictions per second, across all quotas."""

    gating: bool = True
    """Gate new pods of managed quotas with ``elasticquota.dev/admission`` (mutating webhook) and
    release them when they fit (API servers 1.27+; older ones are detected and gating stays off)."""

    gating_exclude_namespaces: list[str] = Field(default_factory=lambda: ["kube-system"])
    """Pods of these namespaces are never gated."""

    dry_run: bool = False
    """Compute and log, but write nothing to the cluster."""

    metrics_port: int = Field(default=8080, ge=0, le=65535)
    """Port of the HTTP server with /healthz, /readyz (and /metrics); 0 disables it."""

    metrics_address: str = Field(default="0.0.0.0", min_length=1)
    """Listen address of that server: all interfaces by default, as a pod's probes need; on a
    pod with ``hostNetwork`` (the node's interfaces), e.g. the node's internal address."""

    log_level: str = "INFO"
    """Python logging level name."""

    numba_cache_seed: str | None = None
    """Directory of a precompiled numba cache (the image ships one), copied at start-up into
    ``NUMBA_CACHE_DIR`` when that holds no cache yet, so that the solver kernel is loaded instead
    of compiled (``elasticquota.numbacache``); unset or missing: nothing is copied."""

    ignore_namespaces: list[str] = Field(default_factory=list)
    """Pods in these namespaces are not accounted at all."""

    lease_name: str = "elastic-quota-operator"
    """Name of the coordination.k8s.io Lease that elects the active replica."""

    lease_namespace: str | None = None
    """Namespace of the Lease; unset: the reserved namespace."""

    lease_duration: float = Field(default=15.0, gt=0)
    """Seconds without renewal after which a standby replica takes over."""

    lease_retry_period: float = Field(default=0.5, gt=0)
    """Seconds between a standby replica's looks at the Lease (client-go's retry period): it takes
    over at most about two of these after the Lease expired. Below half the lease duration."""

    identity: str = Field(default_factory=_default_identity)
    """This replica's identity in the Lease."""

    write_concurrency: int = Field(default=16, ge=1)
    """How many quota writes may be in flight at once."""

    api_timeout: float = Field(default=10.0, gt=0)
    """Seconds after which an API request other than a watch (quota writes, evictions, Events,
    the Lease, gate releases) is abandoned; it is then retried on a fresh connection. Bounds how
    long a connection that silently stopped carrying traffic can hold a write."""

    simulate_nodes: bool = False
    """DEMO ONLY: bind pending pods that fit to nodes and mark them Running (there is no scheduler
    or kubelet in the local control plane). Never on a real cluster."""

    webhook_port: int = Field(default=0, ge=0, le=65535)
    """Port of the HTTPS admission webhook server; 0 (the default) disables the webhooks."""

    webhook_address: str = "0.0.0.0"
    """Address the webhook server listens on."""

    webhook_host: str | None = None
    """Host name or IP the API server reaches the webhooks at (the URL in the webhook
    configurations, and a name of the self-signed certificate); unset: the listen address
    (127.0.0.1 for 0.0.0.0). In a cluster: the webhook Service's DNS name."""

    webhook_cert_file: str | None = None
    """PEM serving certificate of the webhook server; unset: a self-signed one is made at
    start-up (with ``webhook_key_file``: both or neither)."""

    webhook_key_file: str | None = None
    """PEM private key of ``webhook_cert_file``."""

    webhook_ca_file: str | None = None
    """PEM CA bundle the API server verifies the certificate with (``caBundle``); unset: the
    certificate itself (right for a self-signed one)."""

    webhook_failure_policy: Literal["Fail", "Ignore"] = "Fail"
    """What the API server does when the webhooks cannot be reached: refuse the request (Fail,
    as the reference) or let it through unchecked (Ignore)."""

    webhook_configuration: str = "elastic-quota-operator.elasticquota.dev"
    """Name of the Validating/MutatingWebhookConfiguration the operator creates and keeps
    current (its webhooks are named ``<handler>.<name>``, so the name needs a dot); empty: the
    configurations are managed by someone else (e.g. a Helm chart)."""

    @property
    def webhook_enabled(self) -> bool:
        """Admission webhooks are served when a webhook port is set."""
        return self.webhook_port > 0

    @model_validator(mode="after")
    def _retry_within_the_lease(self) -> Settings:
        if self.lease_retry_period * 2 > self.lease_duration:
            raise ValueError(
                f"lease_retry_period ({self.lease_retry_period:g} s) must be at most half of "
                f"lease_duration ({self.lease_duration:g} s)"
            )
        return self

    @model_validator(mode="after")
    def _cert_and_key_together(self) -> Settings:
        if (self.webhook_cert_file is None) != (self.webhook_key_file is None):
            raise ValueError(
                "webhook_cert_file and webhook_key_file go together: set both or neither"
            )
        return self

    @property
    def effective_lease_namespace(self) -> str:
        return self.lease_namespace or self.reserved_namespace

    @classmethod
    def from_sources(cls, overrides: Mapping[str, Any] | None = None) -> Settings:
        """Defaults, then the environment, then explicit (command-line) overrides (validated)."""
        values = {key: value for key, value in (overrides or {}).items() if value is not None}
        return cls(**values)
