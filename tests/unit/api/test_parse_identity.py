"""A pod's identity and application, read the same by the fast and the validated pod readers."""

from __future__ import annotations

from typing import Any

import pytest
from quota_bodies import quota_body

from elasticquota.api.parse import parse_pod, parse_pod_validated, parse_quota
from elasticquota.api.podfast import read_pod
from elasticquota.core.keys import ANNO_USER_INFO, ANNO_USER_LIMITS, POD_LABEL_APPLICATION


def raw_pod(
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owners: Any = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "ns"}
    if annotations is not None:
        metadata["annotations"] = annotations
    if labels is not None:
        metadata["labels"] = labels
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


@pytest.mark.parametrize(
    ("raw", "user", "groups", "application"),
    [
        (raw_pod(), "", (), "ns/pod:p"),
        (
            raw_pod({ANNO_USER_INFO: '{"user": "sue", "groups": ["dev", "test", "dev"]}'}),
            "sue",
            ("dev", "test"),
            "ns/pod:p",
        ),
        (
            raw_pod({"yunikorn.apache.org/user.info": '{"user": "bob"}'}, {"applicationId": "a"}),
            "bob",
            (),
            "ns/a",
        ),
        (
            raw_pod(labels={POD_LABEL_APPLICATION: "spark-1", "applicationId": "other"}),
            "",
            (),
            "ns/spark-1",
        ),
        (raw_pod(owners=[{"controller": True, "uid": "u-1"}]), "", (), "ns/uid:u-1"),
        (raw_pod(owners="broken"), "", (), "ns/pod:p"),
        (raw_pod(owners=[{"uid": "u-2"}, 7]), "", (), "ns/pod:p"),
    ],
)
def test_identity_and_application_are_read_the_same_both_ways(
    raw: dict[str, Any], user: str, groups: tuple[str, ...], application: str
) -> None:
    fast = read_pod(raw)
    validated, problems = parse_pod_validated(raw)
    assert problems == []
    assert fast == validated
    assert (validated.user, validated.groups, validated.application_key) == (
        user,
        groups,
        application,
    )


@pytest.mark.parametrize(
    "text",
    ["not json", '{"groups": ["dev"]}', '{"user": "a\\u0000b"}', '{"user": "s", "groups": 3}'],
)
def test_an_unusable_user_info_is_a_problem_and_the_pod_counts_as_the_default_user(
    text: str,
) -> None:
    raw = raw_pod({ANNO_USER_INFO: text})
    assert read_pod(raw) is None  # left to the validated path, which reports it
    pod, problems = parse_pod(raw)
    assert pod is not None and pod.user == "" and pod.groups == ()
    (problem,) = problems
    assert problem.object == "Pod ns/p"
    assert f"annotation {ANNO_USER_INFO} ignored, counted as the default user" in problem.message


def test_a_quota_carries_its_user_limits_text() -> None:
    text = '- users: ["*"]\n  maxapplications: 2'
    spec, problems = parse_quota(
        quota_body("q", "ns", max={"cpu": "4"}, annotations={ANNO_USER_LIMITS: text})
    )
    assert problems == [] and spec is not None
    assert spec.user_limits == text
