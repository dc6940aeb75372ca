"""What the chart renders with ``helm template`` and no cluster (as Argo CD and Flux render it).

* The CRDs are templates (``helm upgrade`` updates them), their specs exactly the repository's
  ``crds/``; ``crds.keep`` puts ``helm.sh/resource-policy: keep`` on them (``helm uninstall``
  leaves them and the users' quotas), ``crds.install=false`` renders none.
* Every certificate mode renders with no cluster, twice the same (nothing generated, nothing
  looked up: what Argo CD and Flux apply is what ``helm install`` would), the webhook
  configurations without a caBundle unless cert-manager's cainjector is to set it; the operator's
  own mode has RBAC for its one Secret and the two configurations, by name.
* The quota webhook's matchConditions (the operator's own, for Kubernetes 1.28+ or when asked).
* The values users look for in well-kept charts (image digest, hostNetwork and its DNS policy,
  topology spread, extra volumes, ServiceMonitor tuning, NetworkPolicy, aggregated roles).

With helm: ``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing
without it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from chart_render import CHART, Manifest, TemplateError, helm_template
from repo_tools import ROOT

from elasticquota.controller.webhooks.conditions import quota_match_conditions

CRDS = ROOT / "crds"
KEEP = "helm.sh/resource-policy"


def crds_of(manifests: list[Manifest]) -> dict[str, Manifest]:
    return {
        body["metadata"]["name"]: body
        for body in manifests
        if body["kind"] == "CustomResourceDefinition"
    }


def source_crds() -> dict[str, Manifest]:
    found = [yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))]
    return {body["metadata"]["name"]: body for body in found}


def test_the_crds_are_templates_equal_to_crds_dir_and_kept_on_uninstall() -> None:
    rendered = crds_of(helm_template(values={}))
    source = source_crds()
    assert sorted(rendered) == sorted(source) and len(source) == 2
    for name, crd in rendered.items():
        assert crd["spec"] == source[name]["spec"], name
        annotations = crd["metadata"]["annotations"]
        assert annotations[KEEP] == "keep", name
        # the source's own annotations (the *.k8s.io API approval) are kept
        for key, value in (source[name]["metadata"].get("annotations") or {}).items():
            assert annotations[key] == value, (name, key)
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert not (CHART / "crds").exists(), "crds/ of the chart: Helm would never upgrade them"


def test_crds_keep_false_lets_uninstall_delete_them() -> None:
    rendered = crds_of(helm_template(values={"crds": {"keep": False}}))
    assert len(rendered) == 2
    for name, crd in rendered.items():
        assert KEEP not in (crd["metadata"].get("annotations") or {}), name


def test_crds_install_false_renders_no_crd() -> None:
    manifests = helm_template(values={"crds": {"install": False}})
    assert crds_of(manifests) == {}
    assert any(body["kind"] == "Deployment" for body in manifests)


def render_text(values: Manifest) -> str:
    return yaml.safe_dump_all(helm_template(values=values))


def env_of(manifests: list[Manifest]) -> dict[str, str]:
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {each["name"]: each.get("value", "") for each in container["env"]}


def webhooks_of(manifests: list[Manifest]) -> list[Manifest]:
    kinds = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    return [hook for body in manifests if body["kind"] in kinds for hook in body["webhooks"]]


def rules_of(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [rule for body in manifests if body["kind"] == kind for rule in body["rules"]]


MODES: dict[str, Manifest] = {
    "operator": {},
    "certManager": {"webhooks": {"certificate": {"mode": "certManager"}}},
    "secret": {"webhooks": {"certificate": {"mode": "secret", "secretName": "my-webhook-tls"}}},
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_certificate_mode_renders_without_a_cluster_and_the_same_twice(mode: str) -> None:
    values = MODES[mode]
    manifests = helm_template(values=values)
    assert render_text(values) == yaml.safe_dump_all(manifests), "not deterministic"
    kinds = {body["kind"] for body in manifests}
    assert "Secret" not in kinds  # the chart never holds a key
    hooks = webhooks_of(manifests)
    assert len(hooks) == 10
    assert all("caBundle" not in hook["clientConfig"] for hook in hooks)
    env = env_of(manifests)
    volumes = {
        volume["name"]: volume
        for body in manifests
        if body["kind"] == "Deployment"
        for volume in body["spec"]["template"]["spec"]["volumes"]
    }
    role_rules = rules_of(manifests, "Role")
    cluster_rules = rules_of(manifests, "ClusterRole")
    on_configurations = [
        rule for rule in cluster_rules if rule["apiGroups"] == ["admissionregistration.k8s.io"]
    ]
    on_secrets = [rule for rule in role_rules if rule["resources"] == ["secrets"]]
    if mode == "operator":
        assert env["ELASTIC_QUOTA_WEBHOOK_CERT_SECRET"] == "eq-elastic-quota-operator-webhook-tls"
        assert json.loads(env["ELASTIC_QUOTA_WEBHOOK_CERT_DNS_NAMES"])[-1] == (
            "eq-elastic-quota-operator.eq-system.svc.cluster.local"
        )
        assert "ELASTIC_QUOTA_WEBHOOK_CERT_FILE" not in env and "webhook-tls" not in volumes
        assert on_secrets == [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["eq-elastic-quota-operator-webhook-tls"],
                "verbs": ["get", "update"],
            },
        ]
    else:
        secret = "my-webhook-tls" if mode == "secret" else "eq-elastic-quota-operator-webhook-tls"
        assert volumes["webhook-tls"]["secret"]["secretName"] == secret
        assert env["ELASTIC_QUOTA_WEBHOOK_CERT_FILE"].endswith("/tls.crt")
        assert "ELASTIC_QUOTA_WEBHOOK_CERT_SECRET" not in env and on_secrets == []
    if mode == "certManager":
        assert {"Certificate", "Issuer"} <= kinds
        assert "ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION" not in env
        assert on_configurations == []
        annotated = [body for body in manifests if "Webhook" in body["kind"]]
        for body in annotated:
            assert body["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
                "eq-system/eq-elastic-quota-operator-webhook"
            )
    else:
        assert "Certificate" not in kinds
        assert env["ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION"] == "eq-elastic-quota-operator"
        assert on_configurations == [
            {
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": [
                    "validatingwebhookconfigurations",
                    "mutatingwebhookconfigurations",
                ],
                "resourceNames": ["eq-elastic-quota-operator"],
                "verbs": ["get", "patch"],
            }
        ]


def test_secret_mode_without_a_secret_name_is_refused() -> None:
    with pytest.raises(TemplateError) as refused:
        helm_template(values={"webhooks": {"certificate": {"mode": "secret"}}})
    assert "secretName" in refused.value.stderr, refused.value.stderr


def pod_spec(manifests: list[Manifest]) -> Manifest:
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    spec: Manifest = deployment["spec"]["template"]["spec"]
    return spec


def test_the_values_users_look_for() -> None:
    """ci/all-on-values.yaml turns each on: what it renders."""
    values = yaml.safe_load((CHART / "ci" / "all-on-values.yaml").read_text())
    manifests = helm_template(values=values)
    spec = pod_spec(manifests)
    (container,) = spec["containers"]
    assert container["image"] == f"platform/elastic-quota-operator@{values['image']['digest']}"
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    (constraint,) = spec["topologySpreadConstraints"]
    assert constraint["labelSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "elastic-quota-operator",
        "app.kubernetes.io/instance": "eq",
    }
    assert {"name": "extra-ca", "configMap": {"name": "extra-ca"}} in spec["volumes"]
    assert {"name": "extra-ca", "mountPath": "/etc/extra-ca", "readOnly": True} in container[
        "volumeMounts"
    ]
    (monitor,) = [body for body in manifests if body["kind"] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scrapeTimeout"] == "10s" and endpoint["honorLabels"] is True
    assert endpoint["relabelings"][0]["targetLabel"] == "node"
    assert endpoint["metricRelabelings"][0]["action"] == "drop"
    (policy,) = [body for body in manifests if body["kind"] == "NetworkPolicy"]
    webhook, metrics = policy["spec"]["ingress"]
    assert webhook == {"ports": [{"port": "webhook", "protocol": "TCP"}]}  # from anywhere
    assert metrics["from"] == values["networkPolicy"]["metricsFrom"]
    assert policy["spec"]["podSelector"] == {"matchLabels": constraint["labelSelector"][
        "matchLabels"]}  # fmt: skip


def test_defaults_leave_the_pod_as_kubernetes_makes_it() -> None:
    manifests = helm_template(values={})
    spec = pod_spec(manifests)
    assert "hostNetwork" not in spec and "dnsPolicy" not in spec
    assert "topologySpreadConstraints" not in spec
    assert spec["containers"][0]["image"].startswith("elastic-quota-operator:")
    assert "NetworkPolicy" not in {body["kind"] for body in manifests}
    explicit = pod_spec(helm_template(values={"hostNetwork": True, "dnsPolicy": "Default"}))
    assert explicit["dnsPolicy"] == "Default"


def test_aggregated_roles_let_view_read_and_edit_change_quotas() -> None:
    default = {body["metadata"]["name"] for body in helm_template(values={})}
    assert "eq-elastic-quota-operator-view" in default
    assert "eq-elastic-quota-operator-edit" not in default  # as for ResourceQuotas: opt in
    roles = {
        body["metadata"]["name"]: body
        for body in helm_template(values={"rbac": {"aggregateToEdit": True}})
        if body["kind"] == "ClusterRole"
    }
    view = roles["eq-elastic-quota-operator-view"]
    edit = roles["eq-elastic-quota-operator-edit"]
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert "rbac.authorization.k8s.io/aggregate-to-view" not in edit["metadata"]["labels"]
    assert {verb for rule in view["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert all("elasticquotas/status" not in rule["resources"] for rule in edit["rules"])
    off = helm_template(values={"rbac": {"aggregateToView": False, "aggregateToEdit": False}})
    names = {body["metadata"]["name"] for body in off if body["kind"] == "ClusterRole"}
    assert names == {"eq-elastic-quota-operator"}


def quota_webhook_conditions(*options: str, values: Manifest | None = None) -> Any:
    (hook,) = [
        hook
        for hook in webhooks_of(helm_template(*options, values=values))
        if hook["name"].startswith("validate-elasticquota.")
    ]
    return hook.get("matchConditions")


@pytest.mark.parametrize(
    ("version", "setting", "rendered"),
    [
        ("1.27.0", "auto", False),
        ("1.28.0", "auto", True),
        ("1.37.0", "auto", True),
        ("1.25.0", True, True),
        ("1.37.0", False, False),
    ],
)
def test_the_quota_webhook_skips_unchanged_updates_where_the_api_server_has_match_conditions(
    version: str, setting: str | bool, rendered: bool
) -> None:
    """The operator's condition, the same expression (the template has it written out)."""
    values = {"webhooks": {"matchConditions": setting}}
    conditions = quota_webhook_conditions("--kube-version", version, values=values)
    assert conditions == (quota_match_conditions() if rendered else None)
