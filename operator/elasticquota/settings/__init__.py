"""The operator's settings, in one typed place: environment (``ELASTIC_QUOTA_*``) and CLI flags.

Every field documents its unit and default. The command line overrides the environment, which
overrides the defaults (``Settings.from_sources``).

Every field has a checked range (``Field`` bounds, a pattern, a set of names): a value outside it
is refused when the settings are made, so that a bad value stops the start-up with a clear message
(``allowed_values`` words the range) instead of hanging the operator later (an eviction rate so
small that no eviction ever happens, an interval of a year, a port that cannot be bound).

The settings are grouped by concern, one module each, with the fields, their documentation and the
rules among them:

- ``cluster``: the API server's credentials, request timeout, write concurrency, list source,
  dry run;
- ``engine``: the reserved and ignored namespaces, min scaling, the solve's pace, the numba cache;
- ``revocation``: eviction of the pods of over-used quotas (delay, interval, rate);
- ``gating``: the admission gate on new pods;
- ``userlimits``: pods' identities and the enforcement of user and group limits;
- ``observability``: the health and metrics server, the log level, the loop watchdog, user
  metrics;
- ``lease``: the leader election;
- ``webhooks``: the admission webhook server, its configurations and its certificate.

``model`` assembles them into ``Settings`` (with the rules between groups), ``values`` holds the
kinds of values they share, ``messages`` words their errors. The groups never import each other.
"""

from __future__ import annotations

from elasticquota.settings.messages import (
    FILE_SETTINGS,
    ListenError,
    allowed_values,
    invalid_settings_message,
    is_bind_error,
    missing_files,
    unusable_settings_message,
)
from elasticquota.settings.model import Settings
from elasticquota.settings.values import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    DNS_SUBDOMAIN_OR_EMPTY,
    DOTTED_SUBDOMAIN_OR_EMPTY,
    HOUR,
    IDENTITY_NAME,
    LOG_LEVELS,
    MAX_NAME,
    MAX_PATH,
    PATTERN_WORDS,
    USER_NAME,
    WEEK,
    FilePath,
    HostName,
    IdentityPattern,
    NamespaceName,
    Port,
)

__all__ = [
    "DNS_LABEL",
    "DNS_SUBDOMAIN",
    "DNS_SUBDOMAIN_OR_EMPTY",
    "DOTTED_SUBDOMAIN_OR_EMPTY",
    "FILE_SETTINGS",
    "HOUR",
    "IDENTITY_NAME",
    "LOG_LEVELS",
    "MAX_NAME",
    "MAX_PATH",
    "PATTERN_WORDS",
    "USER_NAME",
    "WEEK",
    "FilePath",
    "HostName",
    "IdentityPattern",
    "ListenError",
    "NamespaceName",
    "Port",
    "Settings",
    "allowed_values",
    "invalid_settings_message",
    "is_bind_error",
    "missing_files",
    "unusable_settings_message",
]
