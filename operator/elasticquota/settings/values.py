"""The kinds of values settings take: name patterns, bounds, and the annotated types built on them.

Shared by every group of settings (``elasticquota.settings``), so that a namespace, a port or a
file path is checked the same way wherever a setting takes one. Each pattern has its words
(``PATTERN_WORDS``), which the error messages use (``elasticquota.settings.messages``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

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
