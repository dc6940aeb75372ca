"""Raw objects as the API server sends them, shared by the parse and the fast-path pod tests."""

from __future__ import annotations

from typing import Any


def raw_pod(
    *,
    labels: dict[Any, Any] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Pod ``ns/p`` with one container asking for 1 cpu; ``spec`` keys are added to its spec."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": labels or {}},
        "spec": {
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
            **(spec or {}),
        },
        "status": status or {},
    }
