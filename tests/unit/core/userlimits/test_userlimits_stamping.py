"""core.userlimits.stamping: who a new pod or workload runs for, decided at admission.

Rules: a pod keeps the identity it carries only when a trusted requester (kube-system's
controllers, configured external users or groups) created it; any other pod gets its creator's
identity, replacing a hand-written one (ours or YuniKorn's alias); a workload's pod template gets
its creator's identity by the same rule; an untrusted update that changes a template's identity
is put back; pods are never re-stamped on update; a request without a user decides nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from elasticquota.core.keys import ANNO_USER_INFO
from elasticquota.core.userlimits.identity import Identity, read_identity
from elasticquota.core.userlimits.stamping import TEMPLATE_PATHS, Stamp, TrustRules, stamp_identity

ALIAS = "yunikorn.apache.org/user.info"
SUE = Identity("sue", ("dev",))
BOB = Identity("bob")
RS_CONTROLLER = Identity("system:serviceaccount:kube-system:replicaset-controller")
CI = Identity("ci-bot", ("ci-runners",))
RULES = TrustRules(users=(*TrustRules().users, "ci-bot"), groups=("trusted-*",))


def pod(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "annotations": annotations or {}}}


def workload(kind: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"annotations": annotations} if annotations is not None else {}
    body: dict[str, Any] = {"kind": kind, "metadata": {"name": "w"}}
    node = body
    for key in TEMPLATE_PATHS[kind][:-1]:
        node = node.setdefault(key, {})
    node["metadata"] = metadata
    return body


def applied(body: dict[str, Any], stamp: Stamp | None) -> dict[str, str]:
    """The annotations at the stamp's path once it is applied (what the webhook's patch does)."""
    node = body
    path = stamp.path if stamp is not None else ("metadata",)
    for key in path:
        node = node.setdefault(key, {})
    annotations = dict(node.get("annotations") or {})
    for key, value in (stamp.annotations if stamp is not None else {}).items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return annotations


def test_a_users_own_pod_gets_the_users_identity() -> None:
    body = pod()
    stamp = stamp_identity("Pod", "CREATE", body, None, SUE, RULES)
    assert stamp is not None and stamp.path == ("metadata",)
    assert read_identity(applied(body, stamp)).identity == SUE


@pytest.mark.parametrize("key", [ANNO_USER_INFO, ALIAS])
def test_a_claimed_identity_of_an_untrusted_user_is_replaced(key: str) -> None:
    body = pod({key: '{"user": "admin", "groups": ["platform"]}'})
    stamp = stamp_identity("Pod", "CREATE", body, None, BOB, RULES)
    assert stamp is not None and "not trusted" in stamp.reason
    assert read_identity(applied(body, stamp)).identity == BOB


@pytest.mark.parametrize(
    "requester",
    [RS_CONTROLLER, Identity("system:kube-controller-manager"), CI, Identity("x", ("trusted-ci",))],
)
def test_a_trusted_requester_keeps_the_identity_the_pod_carries(requester: Identity) -> None:
    body = pod({ALIAS: '{"user": "sue", "groups": ["dev"]}'})
    assert stamp_identity("Pod", "CREATE", body, None, requester, RULES) is None
    assert read_identity(applied(body, None)).identity == SUE


def test_a_trusted_requester_without_an_identity_to_pass_on_stamps_its_own() -> None:
    for written in ({}, {ANNO_USER_INFO: "not json"}):
        body = pod(written)
        stamp = stamp_identity("Pod", "CREATE", body, None, RS_CONTROLLER, RULES)
        assert read_identity(applied(body, stamp)).identity == RS_CONTROLLER


def test_a_pod_that_already_carries_its_creators_identity_is_left_alone() -> None:
    body = pod({ANNO_USER_INFO: SUE.annotation()})
    assert stamp_identity("Pod", "CREATE", body, None, SUE, RULES) is None


def test_a_request_without_a_user_or_about_another_kind_decides_nothing() -> None:
    body = pod({ANNO_USER_INFO: '{"user": "admin"}'})
    assert stamp_identity("Pod", "CREATE", body, None, None, RULES) is None
    assert stamp_identity("ConfigMap", "CREATE", body, None, BOB, RULES) is None


def test_an_untrusted_update_of_a_pods_identity_is_put_back() -> None:
    """``kubectl annotate pod --overwrite`` would otherwise move a pod to another user's limits."""
    before = pod({ANNO_USER_INFO: SUE.annotation()})
    for changed in ({ANNO_USER_INFO: '{"user": "bob"}'}, {}, {ALIAS: '{"user": "bob"}'}):
        after = pod({**changed})
        stamp = stamp_identity("Pod", "UPDATE", after, before, BOB, RULES)
        assert stamp is not None and stamp.reason == "bob may not change the pod's identity"
        assert read_identity(applied(after, stamp)).identity == SUE
    assert stamp_identity("Pod", "UPDATE", pod(before["metadata"]["annotations"]), before, BOB,
                          RULES) is None  # fmt: skip
    assert stamp_identity("Pod", "UPDATE", pod({}), before, CI, RULES) is None  # trusted


@pytest.mark.parametrize("kind", sorted(TEMPLATE_PATHS))
def test_a_workloads_template_gets_its_creators_identity(kind: str) -> None:
    for written in (None, {}, {ANNO_USER_INFO: '{"user": "admin"}'}):
        body = workload(kind, written)
        stamp = stamp_identity(kind, "CREATE", body, None, SUE, RULES)
        assert stamp is not None and stamp.path == TEMPLATE_PATHS[kind]
        assert read_identity(applied(body, stamp)).identity == SUE


def test_a_replicaset_made_by_the_deployment_controller_keeps_the_deployments_identity() -> None:
    body = workload("ReplicaSet", {ANNO_USER_INFO: SUE.annotation()})
    deployment_controller = Identity("system:serviceaccount:kube-system:deployment-controller")
    assert stamp_identity("ReplicaSet", "CREATE", body, None, deployment_controller, RULES) is None


def test_an_untrusted_update_of_a_template_identity_is_put_back() -> None:
    before = workload("Deployment", {ANNO_USER_INFO: SUE.annotation()})
    for changed in (
        {ANNO_USER_INFO: '{"user": "admin"}'},  # changed
        {},  # removed
        {ANNO_USER_INFO: SUE.annotation(), ALIAS: '{"user": "admin"}'},  # alias added
    ):
        after = workload("Deployment", changed)
        stamp = stamp_identity("Deployment", "UPDATE", after, before, BOB, RULES)
        assert stamp is not None and "may not change" in stamp.reason
        assert read_identity(applied(after, stamp)).identity == SUE


def test_an_update_that_leaves_the_identity_alone_or_a_trusted_one_changes_nothing() -> None:
    before = workload("Job", {ANNO_USER_INFO: SUE.annotation()})
    same = workload("Job", {ANNO_USER_INFO: SUE.annotation()})
    assert stamp_identity("Job", "UPDATE", same, before, BOB, RULES) is None
    other = workload("Job", {ANNO_USER_INFO: BOB.annotation()})
    assert stamp_identity("Job", "UPDATE", other, before, CI, RULES) is None


@pytest.mark.parametrize("kind", ["Pod", "Deployment"])
def test_an_untrusted_update_adding_our_key_over_a_yunikorn_identity_is_put_back(kind: str) -> None:
    """The identity read is the first key present: ours added over YuniKorn's (a pod a trusted
    CI created with it) would move the pod; it is removed, not set to the requester's."""
    make = pod if kind == "Pod" else lambda annotations: workload(kind, annotations)
    before = make({ALIAS: SUE.annotation()})
    after = make({ALIAS: SUE.annotation(), ANNO_USER_INFO: '{"user": "admin"}'})
    stamp = stamp_identity(kind, "UPDATE", after, before, BOB, RULES)
    assert stamp is not None and stamp.annotations == {ANNO_USER_INFO: None}
    assert read_identity(applied(after, stamp)).identity == SUE


def test_an_untrusted_update_that_adds_an_identity_where_none_was_gets_the_requesters() -> None:
    before = workload("StatefulSet", None)
    after = workload("StatefulSet", {ALIAS: '{"user": "admin"}'})
    stamp = stamp_identity("StatefulSet", "UPDATE", after, before, BOB, RULES)
    assert read_identity(applied(after, stamp)).identity == BOB


def test_trust_patterns_match_whole_names() -> None:
    rules = TrustRules()
    assert rules.trusts(RS_CONTROLLER)
    assert not rules.trusts(Identity("system:serviceaccount:team-a:default"))
    assert not rules.trusts(Identity("system:kube-controller-manager-impostor"))
    assert not rules.trusts(Identity("mallory", ("system:serviceaccount:kube-system:x",)))
