"""The problems a ``plan -o json`` document reports about one object.

Shared by the tests of broken input (quotas, and pods, nodes and other documents), which check
that each breakage yields a problem naming the object and the rule.
"""

from __future__ import annotations

from typing import Any


def problems_of(document: Any, obj: str) -> list[str]:
    """The operator's problems about ``obj`` (the webhooks' refusals and the schema's warnings
    are tested in test_webhook_rules and test_lint)."""
    return [
        p["message"]
        for p in document["problems"]
        if p["object"] == obj and p["source"] in ("operator", "input")
    ]
