"""Raw pods built from their containers, as the request and parse tests write them.

Shared by the effective-request tests (``test_podrequest``, ``test_engine_pods``) and the fast
pod parser's shape tests (``test_podfast_shapes``), which parse the same shapes both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def container(name: str, restart_policy: str | None = None, **requests: str) -> dict[str, Any]:
    """A container asking for ``requests`` (``cpu="100m"``); ``restart_policy`` makes an init
    container a sidecar (``Always``)."""
    result: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if restart_policy:
        result["restartPolicy"] = restart_policy
    return result


def pod_with(*containers: Mapping[str, Any], **spec: Any) -> dict[str, Any]:
    """Pod ``ns/p`` with these containers; ``spec`` keys (``initContainers=...``) are added to its
    spec. No labels, no status."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": list(containers), **spec},
    }
