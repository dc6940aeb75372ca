"""The Helm chart's webhook configurations are those Kopf would generate for the operator's
handlers (rendered with ``helm template``, compared with what the operator in Kopf's managed mode
writes).
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
from admission_reviews import DISCOVERED, managed_webhooks, serving
from chart_helpers import WEBHOOK_KINDS, one, render
from ports import reserved_port

from elasticquota.controller.runner import make_registry, make_state
from elasticquota.controller.webhooks import (
    pod_namespace_selector,
    pod_webhook_excluded_namespaces,
)
from elasticquota.controller.webhooks.identity import WORKLOADS, mutate_workload_id
from elasticquota.settings import Settings

pytestmark = pytest.mark.timeout(600)

#: Handlers the chart has no webhook for: batch/v1beta1 CronJobs (servers before 1.21, where the
#: operator's managed configurations reach them).
MANAGED_ONLY = {f"{mutate_workload_id('cronjobs')}-v1beta1"}


@pytest.mark.parametrize(("policy", "pod_policy"), [("Fail", "Ignore"), ("Ignore", "Fail")])
async def test_chart_webhooks_are_those_kopf_would_generate(policy: str, pod_policy: str) -> None:
    """Rules, operations, side effects, failure policies (the quota webhooks' and the pod
    webhooks' each their own), match policy, review versions, names, paths and the pod webhooks'
    namespaceSelector, the quota webhook's matchConditions (the chart's for 1.28+): as the operator
    in Kopf's managed mode writes them (embedded, against an emulated API server that has the
    quota, pod and workload resources) for the same namespaces (kube-system, its own, the ignored
    ones). The chart adds the Service, its caBundle and its timeout."""
    with reserved_port() as port:  # held until Kopf's server binds it too (SO_REUSEPORT)
        settings = Settings(
            webhook_port=port,
            webhook_address="127.0.0.1",
            webhook_host="127.0.0.1",
            webhook_configuration="elasticquota.dev",
            webhook_failure_policy=policy,
            pod_webhook_failure_policy=pod_policy,
            lease_namespace="eq-system",
            ignore_namespaces=["batch"],
        )
        workloads = {f"{group}/v1/{plural}": kind for group, plural, kind in WORKLOADS}
        registry = make_registry(make_state(settings), settings)
        async with serving(registry, settings, {**DISCOVERED, **workloads}) as served:
            written = await managed_webhooks(served.cluster, "elasticquota.dev")
    manifests = render(
        "eq-system",
        {
            "webhooks": {"failurePolicy": policy, "podFailurePolicy": pod_policy},
            "operator": {"ignoreNamespaces": ["batch"]},
        },
        "--kube-version",
        "1.28.0",  # the quota webhook's matchConditions: for 1.28+
    )
    selector = pod_namespace_selector(pod_webhook_excluded_namespaces(settings, "eq-system"))
    assert selector["matchExpressions"][0]["values"] == ["batch", "eq-system", "kube-system"]
    compared = (
        "name",
        "rules",
        "sideEffects",
        "failurePolicy",
        "matchPolicy",
        "admissionReviewVersions",
        "namespaceSelector",
        "matchConditions",
    )
    for hooks, kind in zip(written, WEBHOOK_KINDS, strict=True):
        expected = [hook for hook in hooks if hook["name"].split(".")[0] not in MANAGED_ONLY]
        charted = one(manifests, kind)["webhooks"]
        assert sorted(hook["name"] for hook in charted) == sorted(hook["name"] for hook in expected)
        for hook in expected:
            (chart_hook,) = [each for each in charted if each["name"] == hook["name"]]
            for key in compared:
                assert chart_hook.get(key) == hook.get(key), (hook["name"], key)
            assert hook["objectSelector"] is None and "objectSelector" not in chart_hook
            on_pods = hook["name"].startswith(("validate-pod.", "mutate-pod.", "mutate-workload-"))
            assert chart_hook.get("namespaceSelector") == (selector if on_pods else None)
            assert hook["failurePolicy"] == (pod_policy if on_pods else policy), hook["name"]
            path = chart_hook["clientConfig"]["service"]["path"]
            assert path == urlparse(hook["clientConfig"]["url"]).path, hook["name"]
        print(f"{kind}: {', '.join(sorted(hook['name'] for hook in expected))}")
