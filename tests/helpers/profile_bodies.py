"""Raw ElasticQuotaProfile objects as the API server holds them.

Shared by the controller tests (``Bodies.profile``) and the ``plan`` tests (``K8s.profile``), so
that a profile's shape (its quota name, the quota labels it stamps, its node selector) is written
in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def profile_body(
    name: str,
    namespace: str = "team",
    *,
    quota_name: str,
    match_labels: Mapping[str, str],
    quota_labels: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A profile that makes ``quota_name`` the root of the nodes matching ``match_labels``."""
    return {
        "apiVersion": "quota.koordinator.sh/v1alpha1",
        "kind": "ElasticQuotaProfile",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": {
            "quotaName": quota_name,
            "quotaLabels": dict(quota_labels or {}),
            "nodeSelector": {"matchLabels": dict(match_labels)},
        },
    }
