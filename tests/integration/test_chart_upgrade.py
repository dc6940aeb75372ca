"""The Helm chart's install, upgrade and uninstall against the real API server.

* A real ``helm install`` then ``helm upgrade`` hold no certificate and no caBundle (the
  operator's own certificate mode: nothing looked up, nothing generated), and pick the
  PodDisruptionBudget API the server has; a caBundle set in between, as the operator sets it,
  survives an upgrade that changes the webhooks. A post-renderer makes the webhook configurations
  neutral (rules on nothing, failures ignored: no replica serves them here).
* ``helm upgrade`` from the previous chart (CRDs in ``crds/``) keeps the users' quotas and updates
  the CRDs; ``helm uninstall`` leaves both.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from chart_helpers import (
    WEBHOOK_KINDS,
    documents,
    fresh_namespace,
    get_json,
    kubectl,
    one,
    quota,
    run,
)
from chart_render import CHART, ROOT, Manifest, helm

pytestmark = pytest.mark.timeout(600)

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
    # The suite's CRDs are not this release's: the test of the CRDs' own lifecycle is the upgrade
    # from the previous chart, below.
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


# -- upgrade from the previous chart: the quotas stay, the CRDs are updated -------------------


#: The chart as it was before its CRDs became templates (its CRDs in crds/, which Helm installs once
#: and never upgrades): ``helm package`` of manifests/helm/elastic-quota-operator at 597566a.
PREVIOUS_CHART = Path(__file__).resolve().parent / "data" / "previous-chart-0.1.0-crds-dir.tgz"
CRD_DIR = ROOT / "crds"
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
