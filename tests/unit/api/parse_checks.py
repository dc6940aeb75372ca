"""The quota the ``test_parse_*`` modules read, and the checks of what a reader makes of a raw
object: the model, the problems, or both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from quota_bodies import quota_body

from elasticquota.api.parse import parse_quota
from elasticquota.core.model.models import Problem
from elasticquota.core.model.quota import Quota

GI = 1024**3
REF = "ElasticQuota team/team"


def quota_raw(
    *,
    labels: dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
    min: dict[str, Any] | None = None,
    max: dict[str, Any] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    """Quota ``team/team`` without a uid, its min 1 cpu and 1Gi and its max 4 cpu and 4Gi unless
    given; ``metadata`` keys are added to its metadata."""
    raw = quota_body(
        "team",
        "team",
        min={"cpu": "1", "memory": "1Gi"} if min is None else min,
        max={"cpu": "4", "memory": "4Gi"} if max is None else max,
        labels=labels,
        annotations=annotations,
        uid=None,
    )
    raw["metadata"] |= metadata
    return raw


T = TypeVar("T")


def quota_of(raw: dict[str, Any]) -> tuple[Quota, list[Problem]]:
    spec, problems = parse_quota(raw)
    assert isinstance(spec, Quota), problems
    return spec, problems


def clean(
    parse: Callable[[dict[str, Any]], tuple[Any, list[Problem]]], raw: dict[str, Any], kind: type[T]
) -> T:
    """What ``parse`` reads from ``raw``, which must be a ``kind`` with no problem."""
    parsed, problems = parse(raw)
    assert problems == [] and isinstance(parsed, kind), problems
    return parsed


def clean_quota(raw: dict[str, Any]) -> Quota:
    return clean(parse_quota, raw, Quota)


def left_out(raw: dict[str, Any]) -> list[Problem]:
    spec, problems = parse_quota(raw)
    assert spec is None
    assert problems
    assert all(problem.object == REF for problem in problems)
    assert problems[-1].message == "the quota is left out of its tree"
    return problems


def messages(problems: list[Problem]) -> str:
    return "\n".join(problem.message for problem in problems)
