"""The operator's settings, in one typed place: environment (``ELASTIC_QUOTA_*``) and CLI flags.

Every field documents its unit and default. The command line overrides the environment, which
overrides the defaults (``Settings.from_sources``).

Every field has a checked range (``Field`` bounds, a pattern, a set of names): a value outside it
is refused when the settings are made, so that a bad value stops the start-up with a clear message
(``allowed_values`` words the range) instead of hanging the operator later (an eviction rate so
small that no eviction ever happens, an interval of a year, a port that cannot be bound).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.core.userlimits.stamping import DEFAULT_TRUSTED_USERS

#: A DNS-1123 label: a namespace's name.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: A DNS-1123 subdomain: the name of most objects (a Lease, a webhook configuration).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
#: A DNS-1123 subdomain, or empty (an optional object name).
DNS_SUBDOMAIN_OR_EMPTY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
#: A DNS-1123 subdomain with at least one dot, or empty (the webhook configurations' name).
DOTTED_SUBDOMAIN_OR_EMPTY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+)?$"
#: A Kubernetes user or group name, or a pattern of them (``*`` matches any text): printable
#: ASCII without spaces.
IDENTITY_NAME = r"^[!-~]+$"
#: A user name a user limit can name (YuniKorn's user name rule): a letter or ``_``, then letters,
#: digits and ``: # / _ . @ -``, optionally ending with ``$``.
USER_NAME = r"^[_a-zA-Z][a-zA-Z0-9:#/_.@-]*\$?$"
#: The words of those patterns, for messages.
PATTERN_WORDS = {
    IDENTITY_NAME: "a user or group name without spaces ('*' matches any text)",
    USER_NAME: "a user name (a letter or '_', then letters, digits and ':#/_.@-')",
    DNS_LABEL: "a DNS label (lowercase letters, digits and '-', a letter or digit at both ends)",
    DNS_SUBDOMAIN: "a DNS subdomain (DNS labels joined by '.')",
    DOTTED_SUBDOMAIN_OR_EMPTY: "empty, or a DNS subdomain with at least one '.'",
    DNS_SUBDOMAIN_OR_EMPTY: "empty, or a DNS subdomain (DNS labels joined by '.')",
}
#: The level names of Python's logging.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: Longest path of a file setting (Linux's PATH_MAX).
MAX_PATH = 4096
#: Longest host name, address or object name (DNS).
MAX_NAME = 253
#: Seconds in an hour and in a week: the longest intervals and delays that make sense.
HOUR = 3600.0
WEEK = 7 * 24 * HOUR

NamespaceName = Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_LABEL)]
FilePath = Annotated[str, Field(min_length=1, max_length=MAX_PATH)]
HostName = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
Port = Annotated[int, Field(ge=0, le=65535)]
IdentityPattern = Annotated[str, Field(min_length=1, max_length=MAX_NAME, pattern=IDENTITY_NAME)]


def _default_identity() -> str:
    """Who this replica is in the leader Lease: the pod name (``POD_NAME``, from the downward API),
    else the host name (a pod's host name is its name). Stable across restarts of the container,
    so that a restarted replica finds the Lease under its own name and takes it back at once."""
    return os.environ.get("POD_NAME") or socket.gethostname()


class Settings(BaseSettings):
    """Knobs of ``elastic-quota run``."""

    model_config = SettingsConfigDict(
        env_prefix="ELASTIC_QUOTA_", extra="ignore", allow_inf_nan=False
    )

    kubeconfig: FilePath | None = None
    """Path of a kubeconfig; unset: $KUBECONFIG, then the in-cluster service account."""

    reserved_namespace: NamespaceName = DEFAULT_RESERVED_NAMESPACE
    """Namespace of the reserved quotas (root, system, default), created at start-up if missing."""

    scale_min_quota: bool = True
    """Scale mins down when a level's available amount is below their sum (Koordinator default)."""

    reconcile_interval: float = Field(default=1.0, ge=0.01, le=HOUR)
    """Seconds: each tree is solved and written at most once per interval (so at most one write
    per quota per interval)."""

    profile_debounce: float = Field(default=1.0, ge=0, le=HOUR)
    """Seconds to wait after a node or profile change before recomputing profile root quotas
    (the reference polls every 10 s instead)."""

    revocation_delay: float = Field(default=120.0, ge=0, le=WEEK)
    """Seconds a quota may stay above its runtime before its pods are revoked."""

    revocation: bool = True
    """Evict pods of quotas that stay above their runtime (Koordinator: monitorAllQuotas, off
    by default there; on here: without a custom scheduler it is how borrowed resources return)."""

    revoke_default_quota: bool = False
    """Also revoke pods of koordinator-default-quota (never those of the system quota)."""

    revocation_interval: float = Field(default=1.0, ge=0.01, le=HOUR)
    """Seconds between over-use checks (Koordinator: revokePodInterval)."""

    eviction_rate: float = Field(default=5.0, ge=0.01, le=1000)
    """At most this many evictions per second, across all quotas (fractions too: 0.2 is one
    eviction every 5 s; at least one every 100 s)."""

    gating: bool = True
    """Gate new pods of managed quotas with ``elasticquota.dev/admission`` (mutating webhook) and
    release them when they fit (API servers 1.27+; older ones are detected and gating stays off)."""

    gating_exclude_namespaces: list[NamespaceName] = Field(default_factory=lambda: ["kube-system"])
    """Pods of these namespaces are never gated."""

    user_limits_refuse_pods: bool = False
    """Where gating does not hold pods back (API servers without scheduling gates, < 1.27; or
    ``gating`` off) the validating pod webhook refuses a new pod that would break its user or
    group limit (quota annotation ``elasticquota.dev/user-limits``) instead of letting it in
    unchecked. Off by default; without effect where gating runs."""

    trusted_identity_users: list[IdentityPattern] = Field(
        default_factory=lambda: list(DEFAULT_TRUSTED_USERS)
    )
    """Requesters (user names; ``*`` matches any text) whose pods and workloads keep the
    ``elasticquota.dev/user-info`` identity they carry: the controllers that create pods from
    templates, and external identity providers. Anyone else's pods and workloads get the
    requester's own identity (user and group limits count it)."""

    trusted_identity_groups: list[IdentityPattern] = Field(default_factory=list)
    """The same by group: members of these groups may hand pods another identity."""

    default_user: str = Field(
        default="nobody", min_length=1, max_length=MAX_NAME, pattern=USER_NAME
    )
    """The user a pod without the ``elasticquota.dev/user-info`` identity counts for in user
    limits (YuniKorn's anonymous user): a limit naming this user, or the ``*`` user limit, applies
    to its pods."""

    user_metrics_max_per_quota: int = Field(default=20, ge=0, le=10000)
    """At most this many users, and this many groups, per quota get series of their own in the
    ``elastic_quota_user_*`` and ``elastic_quota_group_*`` metrics (those with the most pods);
    the others are summed under ``user="(other)"`` (``group="(other)"``). 0: only the sums."""

    dry_run: bool = False
    """Compute and log, but write nothing to the cluster."""

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

    numba_cache_seed: FilePath | None = None
    """Directory of a precompiled numba cache (the image ships one), copied at start-up into
    ``NUMBA_CACHE_DIR`` when that holds no cache yet, so that the solver kernel is loaded instead
    of compiled (``elasticquota.numbacache``); unset or missing: nothing is copied."""

    ignore_namespaces: list[NamespaceName] = Field(default_factory=list)
    """Pods in these namespaces are not accounted at all."""

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

    write_concurrency: int = Field(default=16, ge=1, le=1024)
    """How many quota writes may be in flight at once."""

    api_timeout: float = Field(default=10.0, ge=0.1, le=30)
    """Seconds after which an API request other than a watch (quota writes, evictions, Events,
    the Lease, gate releases) is abandoned; it is then retried on a fresh connection. Bounds how
    long a connection that silently stopped carrying traffic can hold a write. At most 30 s, the
    bound of one attempt of ``kube.errors.with_retries``."""

    list_from_cache: bool = True
    """List pods, quotas, profiles and nodes from the API server's watch cache (``resourceVersion``
    set, as client-go does; one response read as a stream), falling back to a paged list from etcd
    when that request fails. Off: always the paged list (``limit`` + ``continue``), which costs the
    API server far more CPU at start-up and after every relist."""

    webhook_port: Port = 0
    """Port of the HTTPS admission webhook server; 0 (the default) disables the webhooks."""

    webhook_address: HostName = "0.0.0.0"
    """Address the webhook server listens on."""

    webhook_host: HostName | None = None
    """Host name or IP the API server reaches the webhooks at (the URL in the webhook
    configurations, and a name of the self-signed certificate); unset: the listen address
    (127.0.0.1 for 0.0.0.0). In a cluster: the webhook Service's DNS name."""

    webhook_cert_file: FilePath | None = None
    """PEM serving certificate of the webhook server; unset: a self-signed one is made at
    start-up (with ``webhook_key_file``: both or neither)."""

    webhook_key_file: FilePath | None = None
    """PEM private key of ``webhook_cert_file``."""

    webhook_ca_file: FilePath | None = None
    """PEM CA bundle the API server verifies the certificate with (``caBundle``); unset: the
    certificate itself (right for a self-signed one)."""

    webhook_failure_policy: Literal["Fail", "Ignore"] = "Fail"
    """What the API server does with an ElasticQuota write when the quota webhooks cannot be
    reached: refuse it (Fail, as the reference) or let it through unchecked (Ignore). The pod
    webhooks have their own, ``pod_webhook_failure_policy``."""

    pod_webhook_failure_policy: Literal["Fail", "Ignore"] = "Ignore"
    """The same for pod creates and updates (``validate-pod``, ``mutate-pod``): Ignore by default,
    so that an operator that is down, starting or unreachable never blocks the cluster's pods
    (revocation still limits what got in unchecked); Fail refuses them meanwhile."""

    webhook_configuration: str = Field(
        default="elastic-quota-operator.elasticquota.dev",
        max_length=MAX_NAME,
        pattern=DOTTED_SUBDOMAIN_OR_EMPTY,
    )
    """Name of the Validating/MutatingWebhookConfiguration the operator creates and keeps
    current (its webhooks are named ``<handler>.<name>``, so the name needs a dot); empty: the
    configurations are managed by someone else (e.g. a Helm chart)."""

    webhook_cert_secret: str = Field(
        default="", max_length=MAX_NAME, pattern=DNS_SUBDOMAIN_OR_EMPTY
    )
    """Name of a Secret in the Lease's namespace where the operator keeps the webhook server's
    certificate itself (``controller.certrotation``): a CA of its own and a serving certificate
    for ``webhook_cert_dns_names`` signed by it. The first replica to find it missing creates it,
    every replica serves what it holds, the active replica renews it before it expires (a
    replica replaces one that is unusable at once); empty (the default): not managed, the
    certificate comes from ``webhook_cert_file`` or is made in memory. Excludes
    ``webhook_cert_file``."""

    webhook_cert_dns_names: list[HostName] = Field(default_factory=list)
    """DNS names of the managed certificate (``webhook_cert_secret``): the webhook Service's
    names; empty: ``webhook_host``."""

    webhook_cert_validity_days: int = Field(default=365, ge=2, le=3650)
    """Days a managed serving certificate is valid."""

    webhook_cert_renew_before_days: int = Field(default=30, ge=1, le=3649)
    """Days before its end (or its CA's) a managed certificate is renewed; below
    ``webhook_cert_validity_days``."""

    webhook_ca_validity_days: int = Field(default=3650, ge=2, le=36500)
    """Days the managed certificate's CA is valid: the caBundle changes only when it is renewed."""

    webhook_cert_check_interval: float = Field(default=60.0, ge=1, le=HOUR)
    """Seconds between two reads of the managed certificate's Secret (renewals, a replica
    picking up another's renewal) and of the caBundle of ``webhook_ca_bundle_configuration``."""

    webhook_ca_bundle_configuration: str = Field(
        default="", max_length=MAX_NAME, pattern=DNS_SUBDOMAIN_OR_EMPTY
    )
    """Name of the Validating/MutatingWebhookConfiguration (someone else's, e.g. the chart's)
    whose webhooks' caBundle the operator keeps equal to its certificate's CA (the managed one's,
    else ``webhook_ca_file``'s); empty: none (the owner of the configurations sets it)."""

    @property
    def webhook_enabled(self) -> bool:
        """Admission webhooks are served when a webhook port is set."""
        return self.webhook_port > 0

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_in_any_case(cls, value: Any) -> Any:
        known = isinstance(value, str) and value.upper() in LOG_LEVELS
        return value.upper() if known else value

    @model_validator(mode="after")
    def _retry_within_the_lease(self) -> Settings:
        if self.lease_retry_period * 2 > self.lease_duration:
            raise ValueError(
                f"lease_retry_period ({self.lease_retry_period:g} s) must be at most half of "
                f"lease_duration ({self.lease_duration:g} s)"
            )
        return self

    @model_validator(mode="after")
    def _two_servers_two_ports(self) -> Settings:
        if self.metrics_port and self.metrics_port == self.webhook_port:
            raise ValueError(
                f"metrics_port and webhook_port are both {self.metrics_port}: two servers cannot "
                "listen on one port"
            )
        return self

    @model_validator(mode="after")
    def _renew_deadline_within_the_lease(self) -> Settings:
        deadline = self.effective_lease_renew_deadline
        if not self.lease_retry_period < deadline < self.lease_duration:
            raise ValueError(
                f"lease_renew_deadline ({deadline:g} s) must be below "
                f"lease_duration ({self.lease_duration:g} s) and above lease_retry_period "
                f"({self.lease_retry_period:g} s)"
            )
        return self

    @model_validator(mode="after")
    def _cert_and_key_together(self) -> Settings:
        if (self.webhook_cert_file is None) != (self.webhook_key_file is None):
            raise ValueError(
                "webhook_cert_file and webhook_key_file go together: set both or neither"
            )
        return self

    @model_validator(mode="after")
    def _one_certificate_source(self) -> Settings:
        if self.webhook_cert_secret and self.webhook_cert_file is not None:
            raise ValueError(
                "webhook_cert_secret and webhook_cert_file exclude each other: the certificate is "
                "either the operator's own (in the Secret) or given as files"
            )
        if self.webhook_cert_renew_before_days >= min(
            self.webhook_cert_validity_days, self.webhook_ca_validity_days
        ):
            raise ValueError(
                f"webhook_cert_renew_before_days ({self.webhook_cert_renew_before_days}) must be "
                f"below webhook_cert_validity_days ({self.webhook_cert_validity_days}) and "
                f"webhook_ca_validity_days ({self.webhook_ca_validity_days})"
            )
        return self

    @property
    def effective_webhook_cert_dns_names(self) -> list[str]:
        """The managed certificate's names: ``webhook_cert_dns_names``, else ``webhook_host``."""
        return list(self.webhook_cert_dns_names) or [self.webhook_host or "localhost"]

    @property
    def effective_lease_namespace(self) -> str:
        return self.lease_namespace or self.reserved_namespace

    @property
    def effective_lease_renew_deadline(self) -> float:
        """``lease_renew_deadline``, or two thirds of the lease duration."""
        if self.lease_renew_deadline is not None:
            return self.lease_renew_deadline
        return self.lease_duration * 2 / 3

    @classmethod
    def from_sources(cls, overrides: Mapping[str, Any] | None = None) -> Settings:
        """Defaults, then the environment, then explicit (command-line) overrides (validated)."""
        values = {key: value for key, value in (overrides or {}).items() if value is not None}
        return cls(**values)


def _words(schema: Mapping[str, Any]) -> str:
    """One JSON schema (of a field, or of a list's items) in words."""
    if "anyOf" in schema:
        kinds = [option for option in schema["anyOf"] if option.get("type") != "null"]
        return " or ".join(_words(kind) for kind in kinds) + ", or unset"
    if "enum" in schema or "const" in schema:
        names = schema.get("enum", [schema.get("const")])
        return "one of " + ", ".join(str(name) for name in names)
    kind = schema.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return f"a JSON list, each item {_words(schema.get('items', {}))}"
    if kind in ("number", "integer"):
        return _number_words(schema, "a number" if kind == "number" else "an integer")
    if kind == "string":
        return _string_words(schema)
    return "anything"


def _number_words(schema: Mapping[str, Any], noun: str) -> str:
    if "minimum" in schema and "maximum" in schema:
        return f"{noun} from {schema['minimum']:g} to {schema['maximum']:g}"
    limits = [
        f"{words} {schema[key]:g}"
        for key, words in (
            ("minimum", "at least"),
            ("exclusiveMinimum", "above"),
            ("maximum", "at most"),
            ("exclusiveMaximum", "below"),
        )
        if key in schema
    ]
    return " ".join([noun, " and ".join(limits)]).strip()


def _string_words(schema: Mapping[str, Any]) -> str:
    pattern = schema.get("pattern")
    words = [PATTERN_WORDS.get(pattern, f"a string matching {pattern}") if pattern else "a string"]
    if schema.get("minLength", 0) >= 1 and not pattern:
        words[0] = "a non-empty string"
    if "maxLength" in schema:
        words.append(f"of at most {schema['maxLength']} characters")
    return " ".join(words)


def allowed_values(name: str) -> str:
    """What the setting ``name`` accepts, in words: ``a number from 0.01 to 3600``."""
    return _words(Settings.model_json_schema()["properties"][name])


#: pydantic-settings' words for a value of the environment it cannot even parse (a list that is
#: not JSON): the field is named, the value is not.
_UNPARSABLE = re.compile(r'error parsing value for field "(?P<name>[a-z_]+)"')


def _origin(name: str, flags: Mapping[str, str]) -> str:
    """Where a setting's value came from: its flag if given, else its environment variable."""
    variable = f"{Settings.model_config.get('env_prefix', '')}{name.upper()}"
    if name in flags:
        return flags[name]
    if any(key.upper() == variable for key in os.environ):
        return variable
    return ""


def _given(name: str, value: Any, flags: Mapping[str, str], where: str = "") -> str:
    """``eviction_rate = '0' (from ELASTIC_QUOTA_EVICTION_RATE)``."""
    origin = _origin(name, flags)
    return f"{name}{where} = {value!r}" + (f" (from {origin})" if origin else "")


def _setting_words(name: str, value: Any, flags: Mapping[str, str], where: str = "") -> str:
    return f"{_given(name, value, flags, where)}: allowed: {allowed_values(name)}"


def invalid_settings_message(error: Exception, flags: Mapping[str, str] | None = None) -> str:
    """One line naming each refused setting, its value (and where it came from: ``flags`` maps
    the settings given on the command line to their flag) and what it allows."""
    flags = flags or {}
    if isinstance(error, ValidationError):
        problems = []
        for item in error.errors():
            location = item["loc"]
            name = str(location[0]) if location else ""
            if name in Settings.model_fields:
                where = "".join(f"[{part}]" for part in location[1:])
                problems.append(_setting_words(name, item["input"], flags, where))
            else:  # a rule between settings: its message names them and their values
                problems.append(str(item["msg"]).removeprefix("Value error, "))
        text = "; ".join(problems)
    else:
        match = _UNPARSABLE.search(str(error))
        if match and match["name"] in Settings.model_fields:
            name = match["name"]
            variable = _origin(name, {})
            value = next(
                (v for k, v in os.environ.items() if variable and k.upper() == variable), None
            )
            text = _setting_words(name, value, flags)
        else:
            text = str(error)
    return "invalid settings: " + " ".join(text.splitlines())


#: The settings that name a file the operator reads at start-up.
FILE_SETTINGS = ("kubeconfig", "webhook_cert_file", "webhook_key_file", "webhook_ca_file")


def missing_files(settings: Settings, flags: Mapping[str, str] | None = None) -> str:
    """One line naming each file setting whose file does not exist ('' when all do): checked
    when the operator starts (not when settings are made: tests make them with paths of files
    that are never opened)."""
    missing = [
        f"{_given(name, value, flags or {})}: no such file"
        for name in FILE_SETTINGS
        if (value := getattr(settings, name)) is not None and not os.path.isfile(value)
    ]
    return "invalid settings: " + "; ".join(missing) if missing else ""
