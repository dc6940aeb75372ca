"""The Helm chart's rendered manifests against the real API server (``make check-deploy`` does
the offline checks: lint, strict schemas, CRD copies, plain manifests current).

The rendered manifests (default and "everything on" values, rendered for this server's version and
API groups as ``helm install`` would render them) pass ``kubectl apply --dry-run=server``, the
chart's CRDs and the webhook configurations included, both client-side (as helm and ``kubectl
apply`` send them) and server-side (``--server-side``, as Argo CD's and Flux's server-side apply
send them): only server-side apply makes the API server merge the lists Kubernetes keys (a
container's env by name, ports by port and protocol, ...) and refuse a key held twice, which the
client-side dry run accepts (shown here with a duplicated env name). The custom kinds (Prometheus
Operator's, cert-manager's) are checked against minimal test-only CRDs that accept any content:
for them the dry-run proves the apiVersion, kind and metadata only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
import yaml
from chart_helpers import WEBHOOK_KINDS, kubectl, one, render, run
from chart_render import CHART, Manifest

pytestmark = pytest.mark.timeout(600)

ALL_ON_VALUES = CHART / "ci" / "all-on-values.yaml"
#: ``kubectl apply`` options of each way of applying, both dry runs on the server.
APPLY = {
    "client-side": ("--dry-run=server",),
    "server-side": ("--server-side", "--field-manager=chart-dry-run", "--dry-run=server"),
}
#: Custom kinds the chart can render, whose CRDs a bare API server lacks: (group, kind, plural).
CUSTOM_KINDS = (
    ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
    ("monitoring.coreos.com", "PodMonitor", "podmonitors"),
    ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
    ("cert-manager.io", "Issuer", "issuers"),
    ("cert-manager.io", "Certificate", "certificates"),
)


def server_capabilities() -> list[str]:
    """What ``helm install`` would learn from this server: its version and API versions."""
    version = json.loads(run(kubectl(), "version", "--output=json"))["serverVersion"]
    options = ["--kube-version", version["gitVersion"]]
    for api_version in run(kubectl(), "api-versions").split():
        options += ["--api-versions", api_version]
    return options


def stand_in_crd(group: str, kind: str, plural: str) -> Manifest:
    """A CRD accepting any content: the stand-in for a project this test does not install."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"elasticquota.dev/test": "chart"}},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def custom_kinds() -> Iterator[None]:
    """The test-only CRDs of the custom kinds, for the duration of this module."""
    crds = [stand_in_crd(*kind) for kind in CUSTOM_KINDS]
    text = yaml.safe_dump_all(crds)
    run(kubectl(), "apply", "--filename=-", stdin=text)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    run(kubectl(), "wait", "--for=condition=Established", "--timeout=60s", *names)
    try:
        yield
    finally:
        run(kubectl(), "delete", "--filename=-", "--wait=false", stdin=text)


@pytest.mark.parametrize("apply", sorted(APPLY))
@pytest.mark.parametrize("flavour", ["default", "all-on"])
def test_rendered_manifests_pass_a_server_dry_run(
    flavour: str, apply: str, namespace: str, custom_kinds: None
) -> None:
    options = server_capabilities()
    values_file = ALL_ON_VALUES if flavour == "all-on" else None
    manifests = render(namespace, {}, "--include-crds", *options, values_file=values_file)
    kinds = {body["kind"] for body in manifests}
    assert {"CustomResourceDefinition", "Deployment", "Service", *WEBHOOK_KINDS} <= kinds
    if flavour == "all-on":
        assert {"ServiceMonitor", "PodMonitor", "Certificate", "Issuer"} <= kinds
    pdb = one(manifests, "PodDisruptionBudget")
    has_policy_v1 = "policy/v1" in options
    assert pdb["apiVersion"] == ("policy/v1" if has_policy_v1 else "policy/v1beta1")

    output = run(
        kubectl(), "apply", *APPLY[apply], "--filename=-", stdin=yaml.safe_dump_all(manifests)
    )
    accepted = [line for line in output.splitlines() if line.endswith("(server dry run)")]
    print(output)
    assert len(accepted) == len(manifests), output


def test_server_side_apply_refuses_an_env_name_held_twice(namespace: str) -> None:
    manifests = render(namespace, {}, *server_capabilities())
    deployment = one(manifests, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (lease,) = [each for each in container["env"] if each["name"] == "ELASTIC_QUOTA_LEASE_NAME"]
    container["env"].append({**copy.deepcopy(lease), "value": "another"})
    text = yaml.safe_dump(deployment)
    accepted = run(kubectl(), "apply", *APPLY["client-side"], "--filename=-", stdin=text)
    assert accepted.rstrip().endswith("(server dry run)"), accepted
    with pytest.raises(AssertionError) as refused:
        run(kubectl(), "apply", *APPLY["server-side"], "--filename=-", stdin=text)
    print(refused.value)
    assert 'duplicate entries for key [name="ELASTIC_QUOTA_LEASE_NAME"]' in str(refused.value)
