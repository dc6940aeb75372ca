"""The admission webhooks' Kopf registrations and the configurations Kopf manages for them.

Rules (controller/webhooks/): handlers are coroutines registered only when a webhook port is set,
the quota webhooks with the quota failure policy of the settings (Fail by default), the pod webhooks
with the pod one (Ignore by default); pods of ignored namespaces, kube-system and the operator's own
namespace are not checked, and the managed configurations' pod webhooks exclude those namespaces by
a namespaceSelector; their quota webhook has the matchConditions that skip the updates it allows
at once (controller/webhooks/conditions.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pytest
from admission_reviews import DISCOVERED, managed_webhooks, serving
from ports import reserved_port

from elasticquota.controller.runner import build_registry, kopf_settings, make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import (
    MUTATE_POD,
    MUTATE_QUOTA,
    VALIDATE_POD,
    VALIDATE_QUOTA,
    Registration,
    in_cluster_namespace,
    pod_webhook_excluded_namespaces,
)
from elasticquota.controller.webhooks.conditions import quota_match_conditions
from elasticquota.controller.webhooks.identity import WORKLOADS, workload_webhooks
from elasticquota.settings import Settings

#: The workload webhooks' ids (user limits: each stamps its pod template's identity).
WORKLOAD_IDS = [webhook for _, webhook, _ in workload_webhooks()]


def registered(state: ControllerState, settings: Settings) -> dict[str, Registration]:
    """The admission handlers the operator registers with Kopf, by id."""
    _, admission = build_registry(state, settings)
    return {} if admission is None else {each.id: each for each in admission.registered}


def test_webhooks_are_registered_only_when_a_port_is_set(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    assert registered(state, make_settings()) == {}
    assert kopf_settings(make_settings()).admission.server is None
    handlers = registered(state, make_settings(webhook_port=9443))
    assert sorted(handlers) == sorted(
        [VALIDATE_QUOTA, MUTATE_QUOTA, MUTATE_POD, VALIDATE_POD, *WORKLOAD_IDS]
    )
    assert [h.id for h in handlers.values() if not inspect.iscoroutinefunction(h.fn)] == []
    assert sorted(handlers[VALIDATE_QUOTA].operations) == ["CREATE", "DELETE", "UPDATE"]
    assert list(handlers[MUTATE_QUOTA].operations) == ["CREATE"]
    assert sorted(handlers[VALIDATE_POD].operations) == ["CREATE", "UPDATE"]
    assert list(handlers[MUTATE_POD].operations) == ["CREATE", "UPDATE"]
    assert all(sorted(handlers[id_].operations) == ["CREATE", "UPDATE"] for id_ in WORKLOAD_IDS)
    mutating = [h.id for h in handlers.values() if h.mutating]
    assert mutating == [MUTATE_QUOTA, MUTATE_POD, *WORKLOAD_IDS]


def failure_policies(state: ControllerState, settings: Settings) -> dict[str, str]:
    return {
        handler.id: "Ignore" if handler.ignore_failures else "Fail"
        for handler in registered(state, settings).values()
    }


def test_quota_webhooks_fail_closed_and_pod_webhooks_fail_open_by_default(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    assert failure_policies(state, make_settings(webhook_port=1)) == {
        VALIDATE_QUOTA: "Fail", MUTATE_QUOTA: "Fail", VALIDATE_POD: "Ignore", MUTATE_POD: "Ignore",
        **dict.fromkeys(WORKLOAD_IDS, "Ignore"),
    }  # fmt: skip


@pytest.mark.parametrize("quotas", ["Fail", "Ignore"])
@pytest.mark.parametrize("pods", ["Fail", "Ignore"])
def test_each_kind_of_webhook_has_its_own_failure_policy(
    state: ControllerState, make_settings: Callable[..., Settings], quotas: str, pods: str
) -> None:
    settings = make_settings(
        webhook_port=1, webhook_failure_policy=quotas, pod_webhook_failure_policy=pods
    )
    assert failure_policies(state, settings) == {
        VALIDATE_QUOTA: quotas, MUTATE_QUOTA: quotas, VALIDATE_POD: pods, MUTATE_POD: pods,
        **dict.fromkeys(WORKLOAD_IDS, pods),
    }  # fmt: skip


def test_the_pod_webhooks_exclude_kube_system_the_operators_and_the_ignored_namespaces(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(lease_namespace="eq-system", ignore_namespaces=["batch"])
    assert pod_webhook_excluded_namespaces(settings, own_namespace="eq-pods") == (
        "batch", "eq-pods", "eq-system", "kube-system",
    )  # fmt: skip
    unset = make_settings(reserved_namespace="koordinator-system")
    assert pod_webhook_excluded_namespaces(unset, own_namespace="") == (
        "koordinator-system", "kube-system",
    )  # fmt: skip
    service_account = tmp_path / "namespace"
    assert in_cluster_namespace(service_account) is None
    service_account.write_text("eq-pods\n")
    assert in_cluster_namespace(service_account) == "eq-pods"


async def test_the_managed_configurations_scope_the_pod_and_the_quota_webhooks(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    """What Kopf's configuration manager writes (to an emulated API server that has the quota,
    pod and workload resources, but no batch/v1beta1 CronJobs)."""
    with reserved_port() as port:  # kmock's own server, bound meanwhile, cannot take it
        settings = make_settings(
            webhook_port=port, webhook_address="127.0.0.1", webhook_host="127.0.0.1",
            webhook_configuration="eq.example.dev", lease_namespace="eq-system",
        )  # fmt: skip
        discovered = {
            **DISCOVERED,
            **{f"{group}/v1/{plural}": kind for group, plural, kind in WORKLOADS},
        }
        async with serving(make_registry(state, settings), settings, discovered) as served:
            validating, mutating = await managed_webhooks(served.cluster, "eq.example.dev")
    selectors = {hook["name"]: hook.get("namespaceSelector") for hook in validating + mutating}
    conditions = {
        hook["name"]: hook["matchConditions"]
        for hook in validating + mutating
        if "matchConditions" in hook
    }
    assert conditions == {"validate-elasticquota.eq.example.dev": quota_match_conditions()}
    excluded = list(pod_webhook_excluded_namespaces(settings))
    assert {"eq-system", "kube-system"} <= set(excluded)
    pod_selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded}
        ]
    }
    assert selectors == {
        "validate-elasticquota.eq.example.dev": None,
        "mutate-elasticquota.eq.example.dev": None,
        "validate-pod.eq.example.dev": pod_selector,
        "mutate-pod.eq.example.dev": pod_selector,
        **{f"{id_}.eq.example.dev": pod_selector for id_ in WORKLOAD_IDS[:-1]},
        f"{WORKLOAD_IDS[-1]}.eq.example.dev": None,  # batch/v1beta1: not served here
    }
