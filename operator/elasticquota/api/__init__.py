"""The edge: raw Kubernetes objects parsed and validated into the core's typed models."""

from typing import Any

#: A Kubernetes object, or a patch of one, as decoded JSON: what the adapters read and send.
Body = dict[str, Any]
