"""The admission webhooks' decisions over the operator's memory.

Rules (controller/webhooks/): a refusal is a ``kopf.AdmissionError`` (403) carrying every
violation; before the initial listing the operator refuses (Fail) or abstains (Ignore), each kind by
its own policy; what was just admitted is seen by the next request until the watch delivers it;
pods of ignored namespaces, kube-system and the operator's own namespace are not checked; a quota
that still has pods is not deleted; the operator's own writes (reserved quotas) are admitted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import kopf
import pytest

from elasticquota.controller.reconcile.reserved import reserved_manifests
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import Admission, register_webhooks
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies


def refusal(call: Callable[[], None]) -> kopf.AdmissionError:
    with pytest.raises(kopf.AdmissionError) as caught:
        call()
    return caught.value


def test_a_broken_quota_is_refused_with_403_and_every_message(
    admission: Admission, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5", "memory": "-1"}, max={"cpu": "4", "memory": "1Gi"})
    error = refusal(lambda: admission.validate_quota("CREATE", broken, None))
    assert error.code == 403
    assert str(error) == (
        "q quota.Spec.Min's value < 0, in dimensions :[memory] (memory=-1); "
        "resourceKey cpu of quota q min 5 > max 4"
    )


def test_what_was_just_admitted_is_seen_until_the_watch_delivers_it(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    parent = k8s.quota("dept", min={"cpu": "4"}, max={"cpu": "8"}, is_parent=True)
    admission.validate_quota("CREATE", parent, None)
    child = k8s.quota("team", min={"cpu": "2"}, max={"cpu": "8"}, parent="dept")
    admission.validate_quota("CREATE", child, None)  # the parent is not in memory yet
    assert len(admission.recent) == 2
    greedy = k8s.quota("greedy", min={"cpu": "3"}, max={"cpu": "8"}, parent="dept")
    error = refusal(lambda: admission.validate_quota("CREATE", greedy, None))
    assert "parent: dept (sum of its children's min with greedy: cpu 5" in str(error)
    synced.on_quota(parent)
    synced.on_quota(child)
    admission.view()
    assert len(admission.recent) == 0  # the memory is the truth again
    admission.validate_quota("DELETE", child, child)
    admission.validate_quota("CREATE", child, None)  # deleted a moment ago: the name is free


def test_before_the_initial_listing_fail_refuses_and_ignore_abstains(
    state: ControllerState, make_settings: Callable[..., Settings], k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    closed = register_webhooks(kopf.OperatorRegistry(), state, make_settings(webhook_port=1))
    error = refusal(lambda: closed.validate_quota("CREATE", broken, None))
    assert error.code == 503
    assert "still loading" in str(error)
    opened = register_webhooks(
        kopf.OperatorRegistry(),
        state,
        make_settings(webhook_port=1, webhook_failure_policy="Ignore"),
    )
    opened.validate_quota("CREATE", broken, None)  # no error: let through, as if unreachable


def test_a_request_refused_before_the_initial_listing_is_logged_with_its_object(
    state: ControllerState,
    make_settings: Callable[..., Settings],
    k8s: Bodies,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """At a restart every quota write and (Fail) pod request is refused until the listing is in:
    each WARNING says which request and object it refused."""
    quota, pod = k8s.quota("q"), k8s.pod("p", quota="q")
    settings = make_settings(webhook_port=1, pod_webhook_failure_policy="Fail")
    closed = register_webhooks(kopf.OperatorRegistry(), state, settings)
    with caplog.at_level(logging.WARNING, logger="elasticquota.controller.webhooks.admission"):
        refusal(lambda: closed.validate_quota("UPDATE", quota, quota))
        refusal(lambda: closed.mutate_quota(quota, kopf.Patch()))
        refusal(lambda: closed.validate_pod("CREATE", pod, None))
    quota_ns = quota["metadata"]["namespace"]
    assert [record.getMessage() for record in caplog.records] == [
        f"refused UPDATE ElasticQuota {quota_ns}/q: the initial listing is not in memory yet",
        f"refused CREATE ElasticQuota {quota_ns}/q (defaults): the initial listing is not in "
        "memory yet",
        "refused CREATE Pod team/p: the initial listing is not in memory yet",
    ]


def test_before_the_initial_listing_pods_follow_their_own_policy(
    state: ControllerState, make_settings: Callable[..., Settings], k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("dept", is_parent=True))
    pod = k8s.pod("p", quota="dept")
    opened = register_webhooks(kopf.OperatorRegistry(), state, make_settings(webhook_port=1))
    opened.validate_pod("CREATE", pod, None)  # quotas Fail, pods Ignore: the pod is let through
    closed = register_webhooks(
        kopf.OperatorRegistry(),
        state,
        make_settings(webhook_port=1, pod_webhook_failure_policy="Fail"),
    )
    assert refusal(lambda: closed.validate_pod("CREATE", pod, None)).code == 503


@pytest.mark.parametrize(
    ("namespace", "options"),
    [
        ("batch", {"ignore_namespaces": ["batch"]}),
        ("kube-system", {}),
        ("eq-system", {"lease_namespace": "eq-system"}),
    ],
)
def test_pods_of_ignored_system_and_own_namespaces_are_not_checked(
    synced: ControllerState,
    make_settings: Callable[..., Settings],
    k8s: Bodies,
    namespace: str,
    options: dict[str, Any],
) -> None:
    synced.on_quota(k8s.quota("dept", is_parent=True))
    pod = k8s.pod("p", namespace=namespace, quota="dept")
    checked = register_webhooks(
        kopf.OperatorRegistry(), synced, make_settings(webhook_port=1, lease_namespace="other")
    )
    if namespace != "kube-system":
        error = refusal(lambda: checked.validate_pod("CREATE", pod, None))
        assert str(error) == "pod can not be linked to a parentQuotaGroup,quota:dept, pod:p"
    skipping = register_webhooks(
        kopf.OperatorRegistry(), synced, make_settings(webhook_port=1, **options)
    )
    skipping.validate_pod("CREATE", pod, None)


def test_deleting_a_quota_checks_the_pods_in_memory(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    team = k8s.quota("team-a", max={"cpu": "8"})
    synced.on_quota(team)
    synced.on_pod(k8s.pod("p1", quota="team-a", requests={"cpu": "1"}))
    error = refusal(lambda: admission.validate_quota("DELETE", team, team))
    assert str(error) == "delete quota failed, quota team-a has 1 child pods: team/p1"
    synced.on_pod_deleted(k8s.pod("p1"))
    admission.validate_quota("DELETE", team, team)


def test_the_operators_own_reserved_quotas_are_admitted(admission: Admission) -> None:
    for manifest in reserved_manifests("koordinator-system"):
        patch = kopf.Patch()
        admission.mutate_quota(manifest, patch)
        mutated = json.loads(json.dumps(manifest))
        for key, value in (patch.get("metadata") or {}).items():
            mutated["metadata"].setdefault(key, {}).update(value)
        admission.validate_quota("CREATE", mutated, None)
