"""The Helm chart against the real API server (``make check-deploy`` does the offline checks: lint,
strict schemas, CRD copies, plain manifests current).

* The rendered manifests (default and "everything on" values, rendered for this server's version
  and API groups as ``helm install`` would render them) pass ``kubectl apply --dry-run=server``,
  the chart's CRDs and the webhook configurations included. The custom kinds (Prometheus
  Operator's, cert-manager's) are checked against minimal test-only CRDs that accept any content:
  for them the dry-run proves the apiVersion, kind and metadata only.
* A real ``helm install`` then ``helm upgrade`` hold no certificate and no caBundle (the
  operator's own certificate mode: nothing looked up, nothing generated), and pick the
  PodDisruptionBudget API the server has; a caBundle set in between, as the operator sets it,
  survives an upgrade that changes the webhooks. A post-renderer makes the webhook configurations
  neutral (rules on nothing, failures ignored: no replica serves them here).
* The operator started exactly as the rendered Deployment starts it (command, args, environment
  with the fieldRef values substituted, the rendered TLS Secret's files and the emptyDirs at
  local paths; plus KUBECONFIG, as it runs outside the cluster) becomes ready on the rendered
  probe paths and port, takes the Lease in the release namespace under the pod's name, and
  makes its certificate's Secret, sets the caBundle of the rendered configurations (applied with
  rules on nothing) and answers every webhook of them over HTTPS, the certificate verified with
  that caBundle for the Service's DNS name, as the API server would.
* The same operator under the chart's ServiceAccount (its rendered RBAC applied, a token of the
  TokenRequest API in its kubeconfig) instead of the session's admin token: the least-privilege
  roles suffice for every write path (ready, leader, reserved quotas, annotations and status.used
  written, Events; a profile's root quota created and its tree-id label written back; an
  over-used quota's pod evicted after the chart's ``operator.revocationDelay``; no 403 in
  ``elastic_quota_api_errors_total`` nor in the log) and are no more than that (no pod deletion,
  no Secrets).
* The chart's webhooks are those Kopf would generate for the operator's handlers.
* (e) ``helm upgrade`` from the previous chart (CRDs in ``crds/``) keeps the users' quotas and
  updates the CRDs; ``helm uninstall`` leaves both.
* (f) Two replicas serve the one certificate of the Secret; deleted, it is made again, the caBundle
  follows and both serve the new one.

helm is the pinned one of ``make helm`` (``.venv/tools``), else the one on PATH; kubectl is the
machine's. Without them these tests fail, they are never skipped.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import aiohttp
import pytest
import yaml
from admission_reviews import DISCOVERED, managed_webhooks, serving
from harness import eventually, stop_process
from ports import free_port
from profile_bodies import profile_body
from prometheus_client.parser import text_string_to_metric_families

from elasticquota.controller.metrics.names import API_ERRORS, EVICTED, EVICTIONS, OVER_USE
from elasticquota.controller.runner import make_registry, make_state
from elasticquota.controller.webhooks import (
    pod_namespace_selector,
    pod_webhook_excluded_namespaces,
)
from elasticquota.controller.webhooks.identity import WORKLOADS, mutate_workload_id
from elasticquota.core import keys
from elasticquota.settings import Settings

pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "manifests" / "helm" / "elastic-quota-operator"
ALL_ON_VALUES = CHART / "ci" / "all-on-values.yaml"
PINNED_HELM = REPO / ".venv" / "tools" / "node_modules" / ".bin" / "helm"
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
#: Custom kinds the chart can render, whose CRDs a bare API server lacks: (group, kind, plural).
CUSTOM_KINDS = (
    ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
    ("monitoring.coreos.com", "PodMonitor", "podmonitors"),
    ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
    ("cert-manager.io", "Issuer", "issuers"),
    ("cert-manager.io", "Certificate", "certificates"),
)

Manifest = dict[str, Any]


# -- tools --------------------------------------------------------------------------------------


def helm() -> str:
    if PINNED_HELM.exists():
        return str(PINNED_HELM)
    found = shutil.which("helm")
    if found is None:
        pytest.fail(
            "helm not found: run `make helm` (the pinned helm into .venv/tools; `make test` does)",
            pytrace=False,
        )
    return found


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail(
            "kubectl not found on PATH: the machine image ships it (/usr/bin/kubectl); "
            "Debian's kubernetes-client package is the fallback",
            pytrace=False,
        )
    return found


def run(*command: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    """Run a command; its standard output, or an assertion error with everything it said."""
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited with {done.returncode}\n"
            f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
        )
    return done.stdout


def documents(text: str) -> list[Manifest]:
    return [body for body in yaml.safe_load_all(text) if body]


def render(
    namespace: str,
    values: Manifest,
    *options: str,
    release: str = "eq-chart",
    values_file: Path | None = None,
) -> list[Manifest]:
    """``helm template`` of the chart with these values (and options)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
        json.dump(values, file)
    try:
        command = [helm(), "template", release, str(CHART), "--namespace", namespace, *options]
        if values_file is not None:
            command += ["--values", str(values_file)]
        return documents(run(*command, "--values", file.name))
    finally:
        os.unlink(file.name)


def one(manifests: list[Manifest], kind: str) -> Manifest:
    found = [body for body in manifests if body["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects rendered"
    return found[0]


def server_capabilities() -> list[str]:
    """What ``helm install`` would learn from this server: its version and API versions."""
    version = json.loads(run(kubectl(), "version", "--output=json"))["serverVersion"]
    options = ["--kube-version", version["gitVersion"]]
    for api_version in run(kubectl(), "api-versions").split():
        options += ["--api-versions", api_version]
    return options


@contextlib.contextmanager
def fresh_namespace(name: str) -> Iterator[str]:
    """A new namespace, deleted after (without waiting), its pods force-deleted first: no kubelet
    confirms their end here, and a bound pod that outlives its quota counts in the default
    quota's used, which later tests' default tree would lose."""
    run(kubectl(), "create", "namespace", name)
    try:
        yield name
    finally:
        run(
            kubectl(), "delete", "pods", "--all", "-n", name,
            "--grace-period=0", "--force", "--wait=false",
        )  # fmt: skip
        run(kubectl(), "delete", "namespace", name, "--wait=false")


@pytest.fixture
def namespace() -> Iterator[str]:
    with fresh_namespace(f"eq-chart-{uuid.uuid4().hex[:6]}") as name:
        yield name


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


# -- (a) server dry-run ---------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["default", "all-on"])
def test_rendered_manifests_pass_a_server_dry_run(
    flavour: str, namespace: str, custom_kinds: None
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
        kubectl(), "apply", "--dry-run=server", "--filename=-",
        stdin=yaml.safe_dump_all(manifests),
    )  # fmt: skip
    accepted = [line for line in output.splitlines() if line.endswith("(server dry run)")]
    print(output)
    assert len(accepted) == len(manifests), output


# -- (b) helm install and upgrade: a stable certificate ---------------------------------------


POST_RENDERER = """#!{python}
# Records the webhook configurations' caBundles; makes them neutral (rules on a resource that does
# not exist, failures ignored): no other test's writes go through them.
import json, os, sys, yaml
docs = [doc for doc in yaml.safe_load_all(sys.stdin) if doc]
hooks = [doc for doc in docs if doc["kind"] in {kinds!r}]
bundles = {{h["clientConfig"].get("caBundle", "") for doc in hooks for h in doc["webhooks"]}}
record = {{"kinds": [doc["kind"] for doc in docs], "bundles": sorted(bundles)}}
with open(os.environ["EQ_CHART_CAPTURE"], "a") as capture:
    capture.write(json.dumps(record) + "\\n")
for doc in hooks:
    for hook in doc["webhooks"]:
        hook["failurePolicy"] = "Ignore"
        hook["rules"] = [{{"apiGroups": ["never.elasticquota.dev"], "apiVersions": ["v1"],
                          "resources": ["nothings"], "operations": ["CREATE"]}}]
sys.stdout.write(yaml.safe_dump_all(docs))
"""


def secret_data(namespace: str, name: str) -> dict[str, str]:
    secret = json.loads(run(kubectl(), "get", "secret", name, "-n", namespace, "--output=json"))
    data: dict[str, str] = secret["data"]
    return data


def wait_for_pods(namespace: str, selector: str, count: int, timeout: float = 60) -> list[Manifest]:
    deadline = time.monotonic() + timeout
    while True:
        listed = run(kubectl(), "get", "pods", "-n", namespace, "-l", selector, "--output=json")
        pods: list[Manifest] = json.loads(listed)["items"]
        if len(pods) >= count:
            return pods
        if time.monotonic() > deadline:
            events = run(kubectl(), "get", "events", "-n", namespace)
            raise AssertionError(f"{len(pods)} of {count} pods after {timeout}s\n{events}")
        time.sleep(0.5)


def test_install_and_upgrade_hold_no_certificate_and_no_ca_bundle(tmp_path: Path) -> None:
    """helm install then helm upgrade (the default certificate mode, the operator's own): the
    release has no Secret and the webhook configurations no caBundle, in both renders (nothing
    looked up, nothing generated: an Argo CD or Flux render is the same); the pods the server
    accepted; the PodDisruptionBudget API the server has. A caBundle set in between (as the
    operator sets it) survives the upgrade, even one that changes the webhooks."""
    namespace = f"eq-chart-{uuid.uuid4().hex[:6]}"
    release = "eq-install"
    post_renderer = tmp_path / "post-renderer"
    post_renderer.write_text(POST_RENDERER.format(python=sys.executable, kinds=set(WEBHOOK_KINDS)))
    post_renderer.chmod(0o755)
    capture = tmp_path / "capture.jsonl"
    env = {**os.environ, "EQ_CHART_CAPTURE": str(capture)}
    # The suite's CRDs are not this release's: the test of the CRDs' own lifecycle is (e).
    common = [
        "--namespace", namespace, "--post-renderer", str(post_renderer),
        "--set", "crds.install=false",
    ]  # fmt: skip
    try:
        run(helm(), "install", release, str(CHART), "--create-namespace", *common, env=env)
        pods = wait_for_pods(namespace, f"app.kubernetes.io/instance={release}", count=2)
        configuration = f"{release}-elastic-quota-operator"
        bundle = base64.b64encode(b"the operator's CA").decode()
        for kind in WEBHOOK_KINDS:  # what the operator does (kube/certificates.py)
            live = get_json(kind.lower(), configuration)
            patch = [
                {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle}
                for index in range(len(live["webhooks"]))
            ]
            run(kubectl(), "patch", kind.lower(), configuration, "--type=json",
                f"--patch={json.dumps(patch)}")  # fmt: skip
        run(
            helm(),
            "upgrade",
            release,
            str(CHART),
            *common,
            "--set",
            "operator.logLevel=DEBUG",
            "--set",
            "webhooks.timeoutSeconds=7",
            env=env,
        )
        kept = {
            (kind, hook["clientConfig"].get("caBundle", ""), hook["timeoutSeconds"])
            for kind in WEBHOOK_KINDS
            for hook in get_json(kind.lower(), configuration)["webhooks"]
        }
        manifest = documents(run(helm(), "get", "manifest", release, "--namespace", namespace))
    finally:
        with contextlib.suppress(AssertionError):
            run(helm(), "uninstall", release, "--namespace", namespace)
        # Waited for: the Deployment's pods (Pending: no scheduler) leave before other tests.
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            run(kubectl(), "delete", "namespace", namespace, "--timeout=90s")

    # The ReplicaSet controller made the pods: the server accepted the pod spec (security
    # contexts, volumes, probes). They stay Pending: the local control plane has no scheduler.
    assert [pod["status"]["phase"] for pod in pods] == ["Pending", "Pending"]
    assert "Secret" not in {body["kind"] for body in manifest}
    assert kept == {(kind, bundle, 7) for kind in WEBHOOK_KINDS}, "helm upgrade lost the caBundle"
    renders = [json.loads(line) for line in capture.read_text().splitlines()]
    assert len(renders) == 2
    for rendered in renders:
        assert set(WEBHOOK_KINDS) <= set(rendered["kinds"])
        assert rendered["bundles"] == [""], "the chart rendered a caBundle"
    has_policy_v1 = "policy/v1" in run(kubectl(), "api-versions").split()
    assert one(manifest, "PodDisruptionBudget")["apiVersion"] == (
        "policy/v1" if has_policy_v1 else "policy/v1beta1"
    )


# -- (c) the operator as the Deployment starts it ---------------------------------------------


class Pod:
    """The rendered Deployment's pod, run as a local process."""

    def __init__(self, manifests: list[Manifest], root: Path) -> None:
        self.manifests = manifests
        deployment = one(manifests, "Deployment")
        self.name = f"{deployment['metadata']['name']}-7c9d5b6f4-x2x7q"
        self.namespace: str = deployment["metadata"]["namespace"]
        self.spec: Manifest = deployment["spec"]["template"]["spec"]
        (self.container,) = self.spec["containers"]
        self.root = root
        self.mounts = self._mount_volumes()
        self.log = root / "operator.log"
        self.process: subprocess.Popen[bytes] | None = None

    def _mount_volumes(self) -> dict[str, Path]:
        """Mount path -> local directory: emptyDirs empty, Secrets with the rendered Secret's
        files (the kubelet's projection of ``data``)."""
        volumes = {volume["name"]: volume for volume in self.spec["volumes"]}
        secrets = {
            body["metadata"]["name"]: body for body in self.manifests if body["kind"] == "Secret"
        }
        mounts = {}
        for mount in self.container["volumeMounts"]:
            volume = volumes[mount["name"]]
            local = self.root / "volumes" / mount["name"]
            local.mkdir(parents=True)
            if "secret" in volume:
                secret = secrets[volume["secret"]["secretName"]]
                for key, value in secret["data"].items():
                    (local / key).write_bytes(base64.b64decode(value))
            else:
                assert set(volume) == {"name", "emptyDir"}, f"unexpected volume {volume}"
            mounts[mount["mountPath"]] = local
        return mounts

    def _local_path(self, value: str) -> str:
        for mount_path, local in self.mounts.items():
            if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
                return str(local) + value[len(mount_path.rstrip("/")) :]
        return value

    def environment(self) -> dict[str, str]:
        """The container's environment, fieldRefs resolved and mount paths mapped."""
        fields = {"metadata.name": self.name, "metadata.namespace": self.namespace}
        env: dict[str, str] = {}
        for variable in self.container["env"]:
            if "valueFrom" in variable:
                field_path = variable["valueFrom"]["fieldRef"]["fieldPath"]
                env[variable["name"]] = fields[field_path]
            else:
                env[variable["name"]] = self._local_path(variable["value"])
        return env

    def command(self) -> list[str]:
        """command + args, the executable resolved to this environment's console script."""
        parts: list[str] = [*self.container["command"], *self.container.get("args", [])]
        executable, *rest = parts
        local = Path(sys.executable).parent / executable
        found = str(local) if local.exists() else shutil.which(executable)
        assert found, f"{executable} not found"
        return [found, *rest]

    def container_port(self, name: str) -> int:
        ports = {port["name"]: port["containerPort"] for port in self.container["ports"]}
        port: int = ports[name]
        return port

    def start(self, kubeconfig: Path | None = None) -> None:
        """Start the process; ``kubeconfig``: its credentials (default: the session's admin)."""
        env = {
            **self.environment(),
            # Outside the cluster: the API server from a kubeconfig (the test session's unless
            # told), and the console script's directory on PATH. /tmp is the emptyDir in the pod.
            "KUBECONFIG": str(kubeconfig or os.environ["KUBECONFIG"]),
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "TMPDIR": str(self.mounts.get("/tmp", self.root)),
            # The package of this checkout when the session runs from its sources.
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        }
        if "PYTHONPATH" in os.environ:  # the sources under test, where they are not installed
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                self.command(), env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=self.root
            )

    def stop(self) -> None:
        stop_process(self.process)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:] if self.log.exists() else ""

    def http_status(self, probe: Manifest) -> int | None:
        """The status an httpGet probe would see (None: no answer)."""
        get = probe["httpGet"]
        port = get["port"] if isinstance(get["port"], int) else self.container_port(get["port"])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{get['path']}", timeout=2) as r:
                status: int = r.status
                return status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return None

    def http_body(self, container_port: int, path: str = "/metrics") -> str:
        """What a GET on this container port answers (e.g. the metrics exposition)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{container_port}{path}", timeout=5) as r:
            body: bytes = r.read()
            return body.decode()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


#: Charted webhooks the suite's API server (Kubernetes 1.20) never calls: CronJobs became batch/v1
#: in 1.21 (the operator registers a batch/v1beta1 handler too, for managed configurations).
NOT_SERVED = {"/mutate-workload-cronjobs"}


#: Handlers the chart has no webhook for: batch/v1beta1 CronJobs (servers before 1.21, where the
#: operator's managed configurations reach them).
MANAGED_ONLY = {f"{mutate_workload_id('cronjobs')}-v1beta1"}


def admission_review(webhook: Manifest, namespace: str, body: Manifest) -> Manifest:
    (rule,) = webhook["rules"]
    version = rule["apiVersions"][0]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": rule["apiGroups"][0], "version": version, "kind": body["kind"]},
            "resource": {
                "group": rule["apiGroups"][0],
                "version": version,
                "resource": rule["resources"][0],
            },
            "name": body["metadata"]["name"],
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "test-chart", "groups": ["system:authenticated"]},
            "object": body,
            "oldObject": None,
            "dryRun": True,
        },
    }


def quota(name: str, namespace: str, min_cpu: str, max_cpu: str) -> Manifest:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"min": {"cpu": min_cpu}, "max": {"cpu": max_cpu}},
    }


def pod(name: str, namespace: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "main", "image": "app:1"}]},
    }


def workload(plural: str, name: str, namespace: str) -> Manifest:
    """A workload of ``plural`` (one of ``controller.webhooks.identity.WORKLOADS``) with a pod
    template."""
    (kind,) = [kind for _, each, kind in WORKLOADS if each == plural]
    template = {"metadata": {}, "spec": pod(name, namespace)["spec"]}
    spec: Manifest = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    group = "batch" if kind in ("Job", "CronJob") else "apps"
    return {
        "apiVersion": f"{group}/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def operator_values() -> Manifest:
    """Values for a local run: free ports for the probes/metrics and the webhooks."""
    return {"metrics": {"port": free_port()}, "webhooks": {"port": free_port()}}


async def wait_ready(operator: Pod, timeout: float = 180) -> float:
    """Seconds until the rendered readiness probe answers 200; the process must stay up."""
    readiness = operator.container["readinessProbe"]
    started = time.monotonic()

    def ready() -> bool:
        if not operator.alive():
            raise AssertionError(f"the operator exited\n{operator.output()}")
        return operator.http_status(readiness) == 200

    await eventually(ready, timeout=timeout, what="readiness")
    return time.monotonic() - started


async def wait_for_lease(operator: Pod) -> None:
    """The rendered Lease, in the release namespace, held under the pod's name."""
    lease_name = operator.environment()["ELASTIC_QUOTA_LEASE_NAME"]

    def holder() -> bool:
        found = subprocess.run(
            [kubectl(), "get", "lease", lease_name, "-n", operator.namespace,
             "--output=jsonpath={.spec.holderIdentity}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return found.stdout == operator.name

    await eventually(holder, timeout=60, what=f"the Lease held by {operator.name}")


@contextlib.contextmanager
def running(operator: Pod, kubeconfig: Path | None = None) -> Iterator[Pod]:
    """The operator started (with ``kubeconfig``'s credentials, if given), stopped after; an
    assertion failing inside carries its log; it must exit cleanly on SIGTERM."""
    operator.start(kubeconfig)
    try:
        yield operator
    except AssertionError as error:
        raise AssertionError(f"{error}\n--- operator log ---\n{operator.output()}") from None
    finally:
        operator.stop()
    assert operator.process is not None and operator.process.returncode == 0, operator.output()


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


# -- (c') the same operator under the chart's ServiceAccount -----------------------------------


RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


@contextlib.contextmanager
def applied(manifests: list[Manifest]) -> Iterator[None]:
    """These objects in the cluster (admin credentials), deleted after, cluster-scoped ones too."""
    text = yaml.safe_dump_all(manifests)
    run(kubectl(), "apply", "--filename=-", stdin=text)
    try:
        yield
    finally:
        run(kubectl(), "delete", "--filename=-", "--ignore-not-found", "--wait=false", stdin=text)


def aggregated(body: Manifest) -> bool:
    """A ClusterRole the chart aggregates into the built-in view/edit/admin roles."""
    labels = body["metadata"].get("labels") or {}
    return any(key.startswith("rbac.authorization.k8s.io/aggregate-to-") for key in labels)


def service_account_kubeconfig(namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig for the session's server and CA with a TokenRequest token of this
    ServiceAccount (``kubectl create token``) instead of the admin token."""
    token = run(kubectl(), "create", "token", name, "-n", namespace, "--duration=1h").strip()
    claims = token.split(".")[1]
    subject = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"]
    assert subject == f"system:serviceaccount:{namespace}:{name}", subject
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    (user,) = config["users"]
    user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def can_i(verb: str, resource: str, user: str, namespace: str, subresource: str = "") -> bool:
    """``kubectl auth can-i`` for ``user`` (impersonated by the admin): yes or no. A subresource
    goes in its own flag: ``quotas/status`` would ask about an object named ``status``."""
    extra = [f"--subresource={subresource}"] if subresource else []
    answer = subprocess.run(
        [kubectl(), "auth", "can-i", verb, resource, *extra, "-n", namespace, f"--as={user}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert answer.stdout.strip() in {"yes", "no"}, answer
    return answer.stdout.strip() == "yes"


def counter(exposition: str, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """The samples of counter ``name`` by these labels' values, from a /metrics exposition."""
    return {
        tuple(sample.labels[label] for label in labels): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name
    }


def get_json(*arguments: str) -> Manifest:
    got: Manifest = json.loads(run(kubectl(), "get", *arguments, "--output=json"))
    return got


# A profile tree of the test's own for the profile and revocation write paths: one Node, labelled
# for this run only, selected by an ElasticQuotaProfile, deleted after. Its root is labelled
# ignore-default-tree: the node's cpu is then not taken out of the default tree's total, which
# would otherwise become 0 (no other node) instead of absent, and the team quota's 500m pod
# (default tree) would be over its runtime and revoked too.
POOL_CPU = "4"
REVOCATION_DELAY = 1  # seconds (the chart's operator.revocationDelay; 120 by default)


def pool_node(name: str, labels: dict[str, str]) -> Manifest:
    """A Ready Node with POOL_CPU cpu, as a kubelet registers it (status set on creation)."""
    resources = {"cpu": POOL_CPU, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def profile_of_pool(namespace: str, root: str, selector: dict[str, str]) -> Manifest:
    """The profile ``pool`` that makes ``root`` the root of the selected nodes' tree."""
    labels = {keys.LABEL_IS_PARENT: "true", keys.LABEL_IGNORE_DEFAULT_TREE: "true"}
    return profile_body(
        "pool", namespace, quota_name=root, match_labels=selector, quota_labels=labels
    )


@contextlib.contextmanager
def cluster_node(node: Manifest) -> Iterator[None]:
    """``node`` in the cluster, deleted after: it is cluster-scoped."""
    run(kubectl(), "create", "--filename=-", stdin=yaml.safe_dump(node))
    try:
        yield
    finally:
        run(kubectl(), "delete", "node", node["metadata"]["name"], "--ignore-not-found")


def quota_pod(name: str, namespace: str, quota_name: str, cpu: str, node: str | None) -> Manifest:
    """A pod of ``quota_name`` (by label) requesting ``cpu``: bound to ``node``, else pending."""
    body = pod(name, namespace)
    body["metadata"]["labels"] = {keys.POD_LABEL_QUOTA: quota_name}
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    if node is not None:
        body["spec"]["nodeName"] = node
    return body


def over_use(namespace: str, root: str, node: str) -> tuple[list[Manifest], str, list[str]]:
    """Under the profile's root (POOL_CPU = 4 cpu), ``lender`` and ``borrower``, min 2 max 4
    each. The borrower runs two 1500m pods on the node (used 3) while the lender asks for its min
    (a pending 2-cpu pod): the borrower's runtime is 2, below its used, and one of its pods must
    go. Returns the objects, the borrower's name and its pods' names."""
    lender, borrower = f"{root}-lender", f"{root}-borrower"
    quotas = [quota(name, namespace, "2", POOL_CPU) for name in (lender, borrower)]
    for body in quotas:
        body["metadata"]["labels"] = {keys.LABEL_PARENT: root}
    running_pods = [
        quota_pod(f"{borrower}-{i}", namespace, borrower, "1500m", node) for i in (1, 2)
    ]
    waiting = quota_pod(f"{lender}-1", namespace, lender, "2", None)
    names = [body["metadata"]["name"] for body in running_pods]
    return [*quotas, *running_pods, waiting], borrower, names


def refuse_forbidden(operator: Pod) -> None:
    """Fail at once, rather than at a wait's timeout, once the API server has refused a request
    of the operator (its warnings say "forbidden")."""
    if "forbidden" in operator.log.read_text(errors="replace").lower():
        raise AssertionError("the API server refused a request of the operator (403)")


async def wait_for_profile_root(
    operator: Pod, namespace: str, name: str, root: str
) -> tuple[Manifest, Manifest]:
    """The profile's root quota, created by the operator, and the profile once the operator has
    written the tree-id label back onto it."""
    found: dict[str, Manifest] = {}

    def written() -> bool:
        refuse_forbidden(operator)
        quotas = get_json("elasticquotas", "-n", namespace)["items"]
        found.update({body["metadata"]["name"]: body for body in quotas})
        found[name] = get_json("elasticquotaprofiles", name, "-n", namespace)
        return root in found and keys.LABEL_TREE_ID in (found[name]["metadata"].get("labels") or {})

    what = f"the root quota {root} and the tree-id label of the profile {name}"
    try:
        await eventually(written, timeout=60, what=what)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(found, indent=1)}") from None
    return found[root], found[name]


async def wait_for_eviction(operator: Pod, namespace: str) -> set[str]:
    """The pods of ``namespace`` being deleted (a deletionTimestamp), once there are some."""
    terminating: set[str] = set()

    def evicted() -> bool:
        refuse_forbidden(operator)
        pods = get_json("pods", "-n", namespace)["items"]
        terminating.clear()
        terminating.update(
            body["metadata"]["name"] for body in pods if body["metadata"].get("deletionTimestamp")
        )
        return bool(terminating)

    await eventually(evicted, timeout=60, what=f"an eviction in {namespace}")
    return terminating


async def test_operator_runs_under_the_charts_service_account(
    namespace: str, tmp_path: Path
) -> None:
    """The rendered RBAC is enough for everything the operator does, and is not cluster-admin.

    Every write path runs: the reserved quotas (created here if missing, accepted if another
    test's operator made them: the session shares them), a quota's annotations and status, an
    Event, a profile's root quota and its tree-id label, and a revocation (an eviction, the
    over-use timer on the quota, Events) after the chart's ``operator.revocationDelay``, set to
    REVOCATION_DELAY for this run. A release name of its own: the ClusterRole and
    ClusterRoleBinding (named after the release) cannot meet another test's."""
    release = f"eq-rbac-{uuid.uuid4().hex[:6]}"
    values = {**operator_values(), "operator": {"revocationDelay": REVOCATION_DELAY}}
    manifests = render(namespace, values, release=release)
    operator = Pod(manifests, tmp_path)
    account = one(manifests, "ServiceAccount")["metadata"]["name"]
    assert operator.spec["serviceAccountName"] == account
    assert operator.environment()["ELASTIC_QUOTA_REVOCATION_DELAY"] == str(REVOCATION_DELAY)
    user = f"system:serviceaccount:{namespace}:{account}"
    reserved = operator.environment()["ELASTIC_QUOTA_RESERVED_NAMESPACE"]
    team = quota_name = f"{release}-team"  # a quota named like its namespace: the pods' quota
    pool, root = f"{release}-pool", f"{release}-root"  # the profile's namespace, its root quota
    selector = {"elasticquota.dev/test-pool": release}
    node = pool_node(f"{release}-pool-node", selector)
    rbac = [
        body for body in manifests if body["kind"] in RBAC_KINDS and not aggregated(body)
    ]  # the operator's own (the aggregated roles are for the cluster's users: (g))
    assert sorted(body["kind"] for body in rbac) == sorted(RBAC_KINDS)

    with applied(rbac), fresh_namespace(team), fresh_namespace(pool), cluster_node(node):
        # The profile is there before the operator starts: it creates the root at once.
        run(
            kubectl(), "apply", "--filename=-",
            stdin=yaml.safe_dump(profile_of_pool(pool, root, selector)),
        )  # fmt: skip
        kubeconfig = service_account_kubeconfig(namespace, account, tmp_path / "kubeconfig")
        # Not cluster-admin: no pod deletion, no Secrets (the webhook key's among them).
        for verb, resource, where in [
            ("delete", "pods", team), ("get", "secrets", namespace), ("list", "secrets", team),
            ("update", "elasticquotas.scheduling.sigs.k8s.io", team),
            ("delete", "leases.coordination.k8s.io", namespace),
        ]:  # fmt: skip
            assert not can_i(verb, resource, user, where), f"{user} may {verb} {resource}"
        refused = subprocess.run(
            [kubectl(), "get", "secrets", "-n", namespace, f"--kubeconfig={kubeconfig}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "Forbidden" in refused.stderr, refused
        assert can_i("patch", "elasticquotas.scheduling.sigs.k8s.io", user, team, "status")

        with running(operator, kubeconfig):
            seconds = await wait_ready(operator)
            await wait_for_lease(operator)

            def reserved_exist() -> bool:
                quotas = get_json("elasticquotas", "-n", reserved)["items"]
                return set(keys.RESERVED_QUOTAS) <= {body["metadata"]["name"] for body in quotas}

            await eventually(reserved_exist, timeout=60, what=f"the reserved quotas in {reserved}")

            worker = pod(f"{quota_name}-worker", team)
            worker["spec"]["nodeName"] = f"{release}-node"  # bound: it counts in status.used
            worker["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
            broken = quota(f"{team}-broken", team, "3", "2")  # min > max: an Event on it
            team_objects = [quota(quota_name, team, "1", "2"), worker, broken]
            run(kubectl(), "apply", "--filename=-", stdin=yaml.safe_dump_all(team_objects))

            # Profiles: the root quota created, the tree-id label patched onto the profile.
            root_quota, pool_profile = await wait_for_profile_root(operator, pool, "pool", root)
            tree_id = pool_profile["metadata"]["labels"][keys.LABEL_TREE_ID]
            assert root_quota["metadata"]["labels"][keys.LABEL_TREE_ID] == tree_id
            assert root_quota["metadata"]["labels"][keys.LABEL_IS_ROOT] == "true"
            assert root_quota["spec"]["min"]["cpu"] == POOL_CPU, root_quota

            # Revocation, under the root: the borrower over its runtime from the start.
            pool_objects, borrower, borrower_pods = over_use(pool, root, node["metadata"]["name"])
            run(kubectl(), "apply", "--filename=-", stdin=yaml.safe_dump_all(pool_objects))

            body: Manifest = {}

            def written() -> bool:
                body.update(get_json("elasticquota", quota_name, "-n", team))
                annotations = body["metadata"].get("annotations") or {}
                used = (body.get("status") or {}).get("used") or {}
                return keys.ANNO_RUNTIME in annotations and used.get("cpu") == "500m"

            what = f"the runtime annotation and status.used of {quota_name}"
            try:
                await eventually(written, timeout=60, what=what)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{json.dumps(body, indent=1)}") from None

            def warned() -> bool:
                events = get_json(
                    "events", "-n", team, "--field-selector=reason=InvalidElasticQuota"
                )
                names = {event["involvedObject"]["name"] for event in events["items"]}
                return broken["metadata"]["name"] in names

            await eventually(warned, timeout=30, what="the InvalidElasticQuota Event")

            evicted = await wait_for_eviction(operator, pool)
            assert len(evicted) == 1, evicted  # one 1500m pod: used 1500m, under the runtime
            (victim,) = evicted
            assert victim in borrower_pods, victim
            reasons: set[tuple[str, str]] = set()

            def revoked() -> bool:
                events = get_json("events", "-n", pool)["items"]
                reasons.update((e["involvedObject"]["name"], e["reason"]) for e in events)
                return {(victim, "Revoked"), (borrower, "QuotaOverUsed")} <= reasons

            await eventually(revoked, timeout=30, what="the Revoked and QuotaOverUsed Events")
            exposition = operator.http_body(operator.container_port("metrics"))
            errors = counter(exposition, API_ERRORS, "verb", "code")
            evictions = counter(exposition, EVICTIONS, "quota", "reason", "result")
            still_evicted = await wait_for_eviction(operator, pool)  # no later round took the other

        forbidden = {key: count for key, count in errors.items() if key[1] == "403"}
        log = operator.output()
        created = log.count("created reserved quota")
        print(
            f"ready after {seconds:.1f}s as {user}; reserved quotas created: {created} "
            f"(else already there); {quota_name}: "
            f"{body['metadata']['annotations'][keys.ANNO_RUNTIME]} runtime, "
            f"used {body['status']['used']}; profile root {root} (tree {tree_id}); "
            f"evicted {victim}; evictions by (quota, reason, result): {evictions}; "
            f"api errors by (verb, code): {errors or 'none'}"
        )
        assert not forbidden, f"403 from the API server: {forbidden}\n{log}"
        assert "forbidden" not in log.lower(), log  # Kopf's watches too (not in the metric)
        assert evictions == {(borrower, OVER_USE, EVICTED): 1}, evictions  # nothing else
        assert still_evicted == evicted, f"{still_evicted} evicted: one was enough"


async def check_webhooks(operator: Pod, namespace: str, ca_bundle: str) -> None:
    """Every webhook of the rendered configurations, called as the API server calls it: through
    the Service's port to the container's, TLS verified with ``ca_bundle`` (what the operator set
    in the configurations) for the Service's name."""
    service = one(operator.manifests, "Service")
    answered = []
    for kind in WEBHOOK_KINDS:
        for webhook in one(operator.manifests, kind)["webhooks"]:
            reference = webhook["clientConfig"]["service"]
            assert reference["name"] == service["metadata"]["name"]
            assert reference["namespace"] == service["metadata"]["namespace"]
            (port,) = [p for p in service["spec"]["ports"] if p["port"] == reference["port"]]
            target = operator.container_port(port["targetPort"])
            host = f"{reference['name']}.{reference['namespace']}.svc"
            context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
            url = f"https://127.0.0.1:{target}{reference['path']}"
            if reference["path"] in NOT_SERVED:
                continue
            name = f"chart-{uuid.uuid4().hex[:6]}"
            resource = webhook["rules"][0]["resources"][0]
            if resource == "pods":
                cases = [(pod(name, namespace), True)]
            elif webhook["name"].startswith("mutate-workload-"):
                cases = [(workload(resource, name, namespace), True)]
            else:
                cases = [(quota(name, namespace, "1", "2"), True)]
                if reference["path"] == "/validate-elasticquota":
                    cases.append((quota(name, namespace, "3", "2"), False))
            async with aiohttp.ClientSession() as session:
                for body, allowed in cases:
                    review = admission_review(webhook, namespace, body)
                    async with session.post(
                        url, json=review, ssl=context, server_hostname=host
                    ) as reply:
                        assert reply.status == 200, await reply.text()
                        response = (await reply.json())["response"]
                    assert response["uid"] == review["request"]["uid"]
                    assert response["allowed"] is allowed, (reference["path"], response)
                    if not allowed:
                        assert response["status"]["code"] == 403
                        assert "min 3 > max 2" in response["status"]["message"], response
                        print(f"{reference['path']}: {response['status']['message']}")
                    if webhook["name"].startswith(("mutate-workload-", "mutate-pod.")):
                        # the requester's identity (admission_review's userInfo) is stamped
                        patch = base64.b64decode(response.get("patch") or "").decode()
                        assert '"user\\":\\"test-chart\\"' in patch, patch
            answered.append(reference["path"])
    assert sorted(answered) == sorted({
        "/mutate-elasticquota", "/mutate-pod", "/validate-elasticquota", "/validate-pod",
        *(f"/{mutate_workload_id(plural)}" for _, plural, _ in WORKLOADS),
    } - NOT_SERVED)  # fmt: skip


# -- (d) the webhooks Kopf would generate -----------------------------------------------------


@pytest.mark.parametrize(("policy", "pod_policy"), [("Fail", "Ignore"), ("Ignore", "Fail")])
async def test_chart_webhooks_are_those_kopf_would_generate(policy: str, pod_policy: str) -> None:
    """Rules, operations, side effects, failure policies (the quota webhooks' and the pod
    webhooks' each their own), match policy, review versions, names, paths and the pod webhooks'
    namespaceSelector: as the operator in Kopf's managed mode writes them (embedded, against an
    emulated API server that has the quota, pod and workload resources) for the same namespaces
    (kube-system, its own, the ignored ones). The chart adds the Service, its caBundle and its
    timeout."""
    settings = Settings(
        webhook_port=free_port(),
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


# -- (e) upgrade from the previous chart: the quotas stay, the CRDs are updated ----------------


#: The chart as it was before its CRDs became templates (its CRDs in crds/, which Helm installs once
#: and never upgrades): ``helm package`` of manifests/helm/elastic-quota-operator at 597566a.
PREVIOUS_CHART = Path(__file__).resolve().parent / "data" / "previous-chart-0.1.0-crds-dir.tgz"
CRD_DIR = REPO / "crds"
#: What the CRDs gained since the previous chart: a description of ElasticQuota's spec.
NEW_IN_CRD = "The group's bounds: min (guaranteed) and max (ceiling)."


def previous_crds(tmp_path: Path) -> list[Path]:
    run("tar", "-xzf", str(PREVIOUS_CHART), "-C", str(tmp_path))
    found = sorted((tmp_path / "elastic-quota-operator" / "crds").glob("*.yaml"))
    assert len(found) == 2, found
    return found


def spec_description(crd: Manifest) -> str | None:
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    description: str | None = spec.get("description")
    return description


def adopt_crds(release: str, namespace: str) -> None:
    """The README's one-time step before upgrading from a chart with crds/: the CRDs it installed
    become this release's (Helm refuses to take over objects it did not create)."""
    names = [f"crd/{yaml.safe_load(path.read_text())['metadata']['name']}" for path in sorted(
        CRD_DIR.glob("*.yaml"))]  # fmt: skip
    run(kubectl(), "label", "--overwrite", *names, "app.kubernetes.io/managed-by=Helm")
    run(
        kubectl(), "annotate", "--overwrite", *names,
        f"meta.helm.sh/release-name={release}", f"meta.helm.sh/release-namespace={namespace}",
    )  # fmt: skip


def test_upgrade_from_the_previous_chart_keeps_quotas_and_updates_crds(tmp_path: Path) -> None:
    """helm install of the previous chart (CRDs as it left them), a user's ElasticQuota, helm
    upgrade to this chart: the quota is the same object, the CRD is this repository's (its new
    description) and kept by policy; helm uninstall leaves the CRDs and the quota."""
    namespace = f"eq-upgrade-{uuid.uuid4().hex[:6]}"
    release = "eq-upgrade"
    crd_name = "elasticquotas.scheduling.sigs.k8s.io"
    # No webhooks (no replica serves them here: quota writes would be refused), one replica.
    values = [
        "--namespace",
        namespace,
        "--set",
        "webhooks.enabled=false",
        "--set",
        "replicaCount=1",
    ]
    old = previous_crds(tmp_path)
    try:
        # The cluster as the previous chart left it: its CRDs (helm skips crds/ that exist).
        run(kubectl(), "replace", *(f"--filename={path}" for path in old))
        assert spec_description(get_json("crd", crd_name)) is None
        run(helm(), "install", release, str(PREVIOUS_CHART), "--create-namespace", *values)
        with fresh_namespace(f"{namespace}-team") as team:
            run(kubectl(), "create", "--filename=-", stdin=yaml.safe_dump(
                quota("team", team, "1", "2")))  # fmt: skip
            before = get_json("elasticquota", "team", "-n", team)

            refused = subprocess.run(
                [helm(), "upgrade", release, str(CHART), *values],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            # Without the adoption step Helm refuses to take over the CRDs: nothing changes.
            assert refused.returncode != 0 and "cannot be imported" in refused.stderr, refused
            adopt_crds(release, namespace)
            run(helm(), "upgrade", release, str(CHART), *values)
            upgraded = get_json("crd", crd_name)
            after_upgrade = get_json("elasticquota", "team", "-n", team)

            run(helm(), "uninstall", release, "--namespace", namespace)
            after_uninstall = get_json("elasticquota", "team", "-n", team)
            kept = get_json("crd", crd_name)
    finally:
        with contextlib.suppress(AssertionError):
            run(helm(), "uninstall", release, "--namespace", namespace)
        # The session's CRDs as crds/ has them (and without this release's ownership).
        run(
            kubectl(), "replace", *(f"--filename={path}" for path in sorted(CRD_DIR.glob("*.yaml")))
        )
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            run(kubectl(), "delete", "namespace", namespace, "--timeout=90s")

    assert NEW_IN_CRD in (spec_description(upgraded) or ""), upgraded
    assert upgraded["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    uid = before["metadata"]["uid"]
    assert after_upgrade["metadata"]["uid"] == uid and after_upgrade["spec"] == before["spec"]
    assert after_uninstall["metadata"]["uid"] == uid, "helm uninstall deleted a user's quota"
    assert kept["metadata"]["uid"] == upgraded["metadata"]["uid"], "the CRD was deleted"
    print(f"quota {uid} kept through upgrade and uninstall; CRD spec: {spec_description(kept)}")


# -- (f) the operator's own certificate: two replicas, a deleted Secret -----------------------


CHECK_EVERY_SECOND = {"name": "ELASTIC_QUOTA_WEBHOOK_CERT_CHECK_INTERVAL", "value": "1"}


async def test_replicas_share_the_operators_certificate_and_remake_a_deleted_secret(
    namespace: str, tmp_path: Path
) -> None:
    """Two replicas of the default mode (webhooks.certificate.mode operator) serve the one
    certificate of the Secret the first made; the Secret deleted, one of them makes a new one (a
    new CA), the caBundle of the configurations follows and both serve the new certificate."""
    pods = []
    for replica in ("a", "b"):
        values = {**operator_values(), "operator": {"extraEnv": [CHECK_EVERY_SECOND]}}
        pod_ = Pod(render(namespace, values), tmp_path / replica)
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


# -- (g) the aggregated roles: namespace viewers read quotas, editors change them ---------------


async def test_namespace_viewers_read_and_editors_change_quotas(namespace: str) -> None:
    """The chart's aggregated ClusterRoles, applied: the cluster's aggregation controller adds
    them to the built-in view and edit roles, so a user bound to `view` in a namespace may list
    its ElasticQuotas and profiles (not change them), one bound to `edit` may create them (not
    their status, the operator's)."""
    release = f"eq-agg-{uuid.uuid4().hex[:6]}"
    values = {"rbac": {"aggregateToEdit": True}}  # view is on by default, edit is opt-in
    roles = [body for body in render(namespace, values, release=release) if aggregated(body)]
    assert sorted(body["metadata"]["name"] for body in roles) == [
        f"{release}-elastic-quota-operator-edit", f"{release}-elastic-quota-operator-view"
    ]  # fmt: skip
    quotas = "elasticquotas.scheduling.sigs.k8s.io"
    profiles = "elasticquotaprofiles.quota.koordinator.sh"
    viewer, editor = f"{release}-viewer", f"{release}-editor"
    with applied(roles):
        for user, role in ((viewer, "view"), (editor, "edit")):
            run(
                kubectl(), "create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}",
                f"--user={user}", "-n", namespace,
            )  # fmt: skip

        def aggregated_in() -> bool:
            return can_i("list", quotas, viewer, namespace) and can_i(
                "create", quotas, editor, namespace
            )

        await eventually(aggregated_in, timeout=60, what="the roles aggregated into view/edit")
        assert can_i("watch", profiles, viewer, namespace)
        assert not can_i("create", quotas, viewer, namespace)
        assert not can_i("list", quotas, viewer, "default"), "view was granted beyond its namespace"
        assert can_i("delete", profiles, editor, namespace)
        assert not can_i("patch", quotas, editor, namespace, "status")
