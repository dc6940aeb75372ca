"""Helpers of the chart's integration tests (``test_chart_*.py``): helm and kubectl, the chart
rendered as ``helm template`` renders it, objects applied, read and checked (``kubectl auth
can-i``), namespaces of their own, and the ElasticQuota and Pod bodies the tests write.

helm is ``chart_render``'s (``$HELM``, the pinned one of ``make helm``, else the one on PATH);
kubectl is the machine's. Without them these tests fail, they are never skipped.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from chart_render import Manifest, helm_template

WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


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
    """``helm template`` of the chart in ``namespace`` with these values (over ``values_file``'s)
    and options."""
    files = ("--values", str(values_file)) if values_file is not None else ()
    return helm_template(*options, *files, values=values, release=release, namespace=namespace)


def one(manifests: list[Manifest], kind: str) -> Manifest:
    found = [body for body in manifests if body["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects rendered"
    return found[0]


def get_json(*arguments: str) -> Manifest:
    got: Manifest = json.loads(run(kubectl(), "get", *arguments, "--output=json"))
    return got


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
