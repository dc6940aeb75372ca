"""Quota results and the objects they were written on, for the tests of
``core.decisions.diff`` (``test_diff``, ``test_diff_invalid``)."""

from __future__ import annotations

from typing import Any

from engine_factories import quota_result
from json_merge_patch import merge_patch

from elasticquota.core import keys
from elasticquota.core.decisions.diff import WRITTEN_ANNOTATIONS, QuotaWrite
from elasticquota.core.quantities.resources import ResourceList, format_resource_list, to_annotation
from elasticquota.core.solve.results import QuotaResult

GIB = 2**30
FIELDS = ("runtime", "request", "child_request", "non_preemptible_request", "non_preemptible_used")


def result(name: str = "a", namespace: str = "team", **figures: ResourceList) -> QuotaResult:
    """A result whose written figures default to cpu 1 / memory 1Gi (used: cpu 2)."""
    base = {"cpu": 1000, "memory": GIB}
    values: dict[str, ResourceList] = {field: dict(base) for field in FIELDS}
    values["used"] = {"cpu": 2000, "memory": 0}
    values.update(figures)
    return quota_result(name, namespace=namespace, **values)


def written(res: QuotaResult) -> tuple[dict[str, str], dict[str, Any]]:
    """The annotations and status of an object on which ``res`` was written."""
    annotations = {
        key: to_annotation(getattr(res, field))
        for key, field in WRITTEN_ANNOTATIONS.items()
        if not (key == keys.ANNO_RUNTIME and res.name in (keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA))
    }
    return annotations, {"used": format_resource_list(res.used)}


def apply(
    change: QuotaWrite, annotations: dict[str, str], status: dict[str, Any] | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """The object after the writer's two merge patches (annotations, then status)."""
    body = {"metadata": {"annotations": annotations}, "status": status or {}}
    body = merge_patch(body, {"metadata": {"annotations": change.annotations}})
    if change.used is not None:
        body = merge_patch(body, {"status": {"used": change.used}})
    return body["metadata"]["annotations"], body["status"]
