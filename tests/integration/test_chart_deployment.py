"""The operator started exactly as the chart's Deployment starts it, against the real API server.

* Command, args, environment with the fieldRef values substituted, the rendered TLS Secret's files
  and the emptyDirs at local paths (plus KUBECONFIG, as it runs outside the cluster): it becomes
  ready on the rendered probe paths and port, takes the Lease in the release namespace under the
  pod's name, and makes its certificate's Secret, sets the caBundle of the rendered configurations
  (applied with rules on nothing) and answers every webhook of them over HTTPS, the certificate
  verified with that caBundle for the Service's DNS name, as the API server would.
* Two replicas serve the one certificate of the Secret; deleted, it is made again, the caBundle
  follows and both serve the new one.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
from pathlib import Path

import pytest
from chart_helpers import WEBHOOK_KINDS, applied, get_json, kubectl, one, render, run
from chart_pod import Pod, operator_values, running, wait_for_lease, wait_ready
from chart_render import Manifest
from chart_webhook_calls import check_webhooks
from harness import eventually

pytestmark = pytest.mark.timeout(600)


#: The certificate's Secret and the caBundle checked every second (the operator's default: 60 s).
CHECK_EVERY_SECOND = {"certificate": {"checkInterval": 1}}


def secret_data(namespace: str, name: str) -> dict[str, str]:
    secret = json.loads(run(kubectl(), "get", "secret", name, "-n", namespace, "--output=json"))
    data: dict[str, str] = secret["data"]
    return data


def neutral_webhook_configurations(manifests: list[Manifest]) -> list[Manifest]:
    """The rendered webhook configurations, each webhook's rules on a resource that does not
    exist and failurePolicy Ignore: in the cluster for the operator to set their caBundle, called
    for nothing (no other test's writes go through them)."""
    neutral = []
    for kind in WEBHOOK_KINDS:
        body = json.loads(json.dumps(one(manifests, kind)))
        for webhook in body["webhooks"]:
            webhook["failurePolicy"] = "Ignore"
            webhook["rules"] = [
                {
                    "apiGroups": ["never.elasticquota.dev"],
                    "apiVersions": ["v1"],
                    "resources": ["nothings"],
                    "operations": ["CREATE"],
                }
            ]
        neutral.append(body)
    return neutral


async def wait_for_ca_bundles(configurations: list[Manifest], ca_bundle: str) -> None:
    """Every webhook of these configurations (in the cluster) carries ``ca_bundle``."""
    seen: dict[str, set[str]] = {}

    def carried() -> bool:
        for body in configurations:
            live = get_json(body["kind"].lower(), body["metadata"]["name"])
            seen[body["kind"]] = {
                hook["clientConfig"].get("caBundle", "") for hook in live["webhooks"]
            }
        return all(bundles == {ca_bundle} for bundles in seen.values())

    try:
        await eventually(carried, timeout=30, what="the caBundle of the webhook configurations")
    except AssertionError as error:
        raise AssertionError(f"{error}: {seen}") from None


def served_certificate(operator: Pod) -> bytes:
    """The certificate (DER) the operator's webhook port serves (no verification)."""
    port = operator.container_port("webhook")
    return ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port), timeout=5))


def der(encoded_pem: str) -> bytes:
    """A Secret's base64 PEM certificate as DER."""
    return ssl.PEM_cert_to_DER_cert(base64.b64decode(encoded_pem).decode())


async def test_operator_runs_as_the_deployment_starts_it(namespace: str, tmp_path: Path) -> None:
    manifests = render(namespace, operator_values())
    operator = Pod(manifests, tmp_path)
    container = operator.container
    assert container["command"] == ["elastic-quota"] and container["args"] == ["run"]
    env = operator.environment()
    assert env["ELASTIC_QUOTA_WEBHOOK_CONFIGURATION"] == ""
    assert env["ELASTIC_QUOTA_IDENTITY"] == operator.name
    assert env["ELASTIC_QUOTA_LEASE_NAMESPACE"] == namespace
    secret = env["ELASTIC_QUOTA_WEBHOOK_CERT_SECRET"]
    configurations = neutral_webhook_configurations(manifests)
    with applied(configurations), running(operator):
        await wait_ready(operator)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert operator.http_status(container[probe]) == 200, probe
        exposition = operator.http_body(container_port=operator.container_port("metrics"))
        assert "elastic_quota_info{" in exposition and "elastic_quota_ready 1.0" in exposition
        await wait_for_lease(operator)
        # The operator's own certificate: the Secret it made, the caBundle it set.
        stored = secret_data(namespace, secret)
        assert set(stored) == {"tls.crt", "tls.key", "ca.crt", "ca.key"}
        await wait_for_ca_bundles(configurations, stored["ca.crt"])
        await check_webhooks(operator, namespace, stored["ca.crt"])
        assert served_certificate(operator) == der(stored["tls.crt"])


async def test_replicas_share_the_operators_certificate_and_remake_a_deleted_secret(
    namespace: str, tmp_path: Path
) -> None:
    """Two replicas of the default mode (webhooks.certificate.mode operator) serve the one
    certificate of the Secret the first made; the Secret deleted, one of them makes a new one (a
    new CA), the caBundle of the configurations follows and both serve the new certificate."""
    pods = []
    for replica in ("a", "b"):
        values = operator_values()
        values["webhooks"].update(CHECK_EVERY_SECOND)
        pod_ = Pod(render(namespace, values), tmp_path / replica)
        assert pod_.environment()["ELASTIC_QUOTA_WEBHOOK_CERT_CHECK_INTERVAL"] == "1"
        pod_.name = f"{pod_.name[:-1]}{replica}"  # each replica its own pod name
        pods.append(pod_)
    first, second = pods
    secret = first.environment()["ELASTIC_QUOTA_WEBHOOK_CERT_SECRET"]
    configurations = neutral_webhook_configurations(first.manifests)
    with applied(configurations), running(first), running(second):
        for each in pods:
            await wait_ready(each)
        stored = secret_data(namespace, secret)
        await wait_for_ca_bundles(configurations, stored["ca.crt"])
        assert {served_certificate(each) for each in pods} == {der(stored["tls.crt"])}

        run(kubectl(), "delete", "secret", secret, "-n", namespace)
        remade: dict[str, str] = {}

        def made_again() -> bool:
            found = subprocess.run(
                [kubectl(), "get", "secret", secret, "-n", namespace, "--output=json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if found.returncode == 0:
                remade.update(json.loads(found.stdout)["data"])
            return bool(remade) and remade["ca.crt"] != stored["ca.crt"]

        await eventually(made_again, timeout=30, what=f"Secret {secret} made again")
        await wait_for_ca_bundles(configurations, remade["ca.crt"])

        def both_serve_it() -> bool:
            return {served_certificate(each) for each in pods} == {der(remade["tls.crt"])}

        await eventually(both_serve_it, timeout=30, what="both replicas serving the new one")
        await check_webhooks(second, namespace, remade["ca.crt"])
        logs = first.log.read_text(errors="replace") + second.log.read_text(errors="replace")
    assert logs.count("webhook certificate: created Secret") == 2, logs  # first start, remade
