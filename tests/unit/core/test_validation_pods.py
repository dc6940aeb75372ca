"""The admission rules on pods, one rule at a time: no pod in a parent quota (the quota a pod
resolves to as the scheduler does) and a preemptible label that cannot change, each refused with
the pod and the quota in its message and accepted otherwise."""

from __future__ import annotations

import json

from rule_objects import DEPT, TEAM_A, messages, pod_body, quota, rules, view

from elasticquota.core import keys
from elasticquota.core.validation import pod_quota, validate_pod

# -- pods -----------------------------------------------------------------------------------------


def test_pods_cannot_go_to_a_parent_quota() -> None:
    labelled = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "dept"})
    assert messages(validate_pod(labelled, None, view(DEPT, TEAM_A))) == [
        "pod can not be linked to a parentQuotaGroup,quota:dept, pod:web-1"
    ]
    assert validate_pod(pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"}), None,
                        view(DEPT, TEAM_A)) == []  # fmt: skip


def test_an_update_that_keeps_the_pod_in_its_quota_is_not_refused_for_it() -> None:
    """Deviation: a pod already in a parent quota can still drop a finalizer or a gate."""
    inside = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "dept"})
    finalized = json.loads(json.dumps(inside))
    finalized["metadata"]["finalizers"] = []
    assert validate_pod(finalized, inside, view(DEPT, TEAM_A)) == []
    moved_in = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"})
    assert rules(validate_pod(inside, moved_in, view(DEPT, TEAM_A))) == ["pod-in-parent"]


def test_a_pod_resolves_to_its_quota_as_the_scheduler_does() -> None:
    same_name = quota("ns-a", namespace="ns-a", is_parent=True)
    listed = quota("lister", is_parent=True, annotations={keys.ANNO_NAMESPACES: '["ns-b"]'})
    cluster = view(same_name, listed, DEPT)
    assert pod_quota(pod_body("x", namespace="ns-a"), cluster) == "ns-a"
    assert pod_quota(pod_body("x", namespace="ns-b"), cluster) == "lister"
    assert pod_quota(pod_body("x", namespace="ns-c"), cluster) == keys.DEFAULT_QUOTA
    unknown = pod_body("x", namespace="ns-a", labels={keys.POD_LABEL_QUOTA: "nope"})
    assert pod_quota(unknown, cluster) == keys.DEFAULT_QUOTA  # an unknown quota: the default
    assert validate_pod(unknown, None, cluster) == []
    assert rules(validate_pod(pod_body("x", namespace="ns-b"), None, cluster)) == ["pod-in-parent"]


def test_the_preemptible_label_cannot_change() -> None:
    key = keys.POD_LABEL_PREEMPTIBLE
    old = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"})
    new = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a", key: "false"})
    assert messages(validate_pod(new, old, view(DEPT, TEAM_A))) == [
        f"Preemptible label is forbidden modify now. (pod web-1: {key} '' -> 'false')"
    ]
    assert validate_pod(new, new, view(DEPT, TEAM_A)) == []
    assert validate_pod(new, None, view(DEPT, TEAM_A)) == []  # set at creation: fine
