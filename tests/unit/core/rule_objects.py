"""The objects the admission rules are tried on in the ``test_validation_*`` modules, and what
those read of the violations found.

Objects are raw dicts as the API server sends them; the cluster is a ``ClusterView`` of raw quotas
and ``PodInfo`` pods.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from quota_bodies import quota_body

from elasticquota.core import keys
from elasticquota.core.model.models import PodInfo
from elasticquota.core.validation import ClusterView, Violation

Raw = dict[str, Any]


def quota(
    name: str,
    namespace: str = "team",
    *,
    max: Mapping[str, Any] | None = None,
    used: Mapping[str, str] | None = None,
    **shape: Any,
) -> Raw:
    """An ElasticQuota without a uid (max 10 cpu unless given; ``shape``: ``quota_body``'s
    options)."""
    status = None if used is None else {"used": dict(used)}
    return quota_body(name, namespace, max=max or {"cpu": "10"}, uid=None, status=status, **shape)


def pod_body(name: str, namespace: str = "team", labels: Mapping[str, str] | None = None) -> Raw:
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}}


def pod(name: str, namespace: str = "team", quota_label: str = "") -> PodInfo:
    return PodInfo(namespace=namespace, name=name, requests={"cpu": 1000}, quota_label=quota_label)


def view(*quotas: Raw, pods: Iterable[PodInfo] = ()) -> ClusterView:
    return ClusterView(quotas, pods)


def messages(found: list[Violation]) -> list[str]:
    return [violation.message for violation in found]


def rules(found: list[Violation]) -> list[str]:
    return [violation.rule for violation in found]


def with_labels(raw: Raw, **changes: str | None) -> Raw:
    """A copy of ``raw`` with labels set (or removed with None); keys are label suffixes."""
    copy = json.loads(json.dumps(raw))
    labels = copy["metadata"]["labels"]
    for suffix, value in changes.items():
        key = f"{keys.PREFIX}/{suffix.replace('_', '-')}"
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    return copy


def with_spec(raw: Raw, **spec: Mapping[str, Any]) -> Raw:
    copy = json.loads(json.dumps(raw))
    copy["spec"].update({key: dict(value) for key, value in spec.items()})
    return copy


# A parent with 10 cpu of min, and one child taking 6 of it.
DEPT = quota("dept", min={"cpu": "10"}, max={"cpu": "20"}, is_parent=True)
TEAM_A = quota("team-a", min={"cpu": "6"}, max={"cpu": "20"}, parent="dept")
