"""The top-level keys of ``plan -o json`` (docs/cli.md), in the order they are printed.

Shared by the CLI test (one JSON document) and the report test (exactly these sections).
"""

from __future__ import annotations

PLAN_DOCUMENT_KEYS = (
    "apiVersion",  # elastic-quota.cli/v1
    "kind",  # Plan
    "quotas",
    "trees",
    "revocations",
    "admission",
    "preemptions",
    "problems",
    "users",
    "groups",
)
