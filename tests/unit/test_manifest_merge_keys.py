"""``manifests/tools/validate_manifests.py`` (``make check-deploy``) refuses a key held twice in a
list Kubernetes merges by key, as the Makefile runs it (its versions, the chart's renders).

* The chart's renders of ``make check-chart`` (default, all-on and no-webhooks values, and the
  default for the newest Kubernetes, against its schemas alone) pass.
* A rendered object given a second entry with one key, in each list the chart renders or users
  add through values (the pod's containers, initContainers, volumes and imagePullSecrets, the
  container's env, ports and volumeMounts, the Service's ports, the webhooks), is refused naming
  the file, the object, the list and the key, and nothing else: the keys come from the schemas
  kubernetes-validate ships (``manifests/tools/merge_keys.py``).
* A port's protocol left out is TCP (``{containerPort: 8080}`` and ``{containerPort: 8080,
  protocol: TCP}`` are one entry), one port number for TCP and UDP is two; lists that are not
  keyed (RBAC rules) may repeat an entry.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_render import CHART, Manifest, helm_template
from repo_tools import ROOT

MAKEFILE = (ROOT / "Makefile").read_text()
#: ``-k 1.25.0 -k 1.37.0``: the versions ``make check-deploy`` validates against.
VERSIONS = MAKEFILE.split("validate_manifests.py ", 1)[1].split("\n", 1)[0].split()
#: What ``make check-chart`` renders, by name: its ``helm template`` options but the namespace and
#: the Kubernetes version (``KUBE_VERSIONS``).
RENDERS = {
    "default": ("--include-crds",),
    "all-on": ("--include-crds", "--values", str(CHART / "ci" / "all-on-values.yaml")),
    "no-webhooks": ("--set", "webhooks.enabled=false"),
    "newest": ("--include-crds",),
}
#: The version each is rendered for (1.25 unless named), and validated against: the newest
#: render has what only newer clusters get (the quota webhook's matchConditions).
KUBE_VERSIONS = {"newest": "1.37.0"}
POD = "spec.template.spec"
CONTAINER = f"{POD}.containers.0"
#: Changes that give a list of the default render a second entry with one key: (kind, the list's
#: path, what to append or the whole list, the key named in the error).
DUPLICATES = [
    ("Deployment", f"{CONTAINER}.env", {"name": "ELASTIC_QUOTA_LEASE_NAME", "value": "x"},
     "name=ELASTIC_QUOTA_LEASE_NAME"),
    ("Deployment", f"{POD}.containers", {"name": "operator", "image": "busybox"}, "name=operator"),
    ("Deployment", f"{POD}.initContainers",
     [{"name": "wait", "image": "busybox"}, {"name": "wait", "image": "alpine"}], "name=wait"),
    ("Deployment", f"{POD}.volumes", {"name": "tmp", "emptyDir": {}}, "name=tmp"),
    ("Deployment", f"{POD}.imagePullSecrets", [{"name": "pull"}, {"name": "pull"}], "name=pull"),
    ("Deployment", f"{CONTAINER}.ports", {"name": "tcp", "containerPort": 8080, "protocol": "TCP"},
     "containerPort=8080,protocol=TCP"),
    ("Deployment", f"{CONTAINER}.ports", {"name": "default", "containerPort": 8080},
     "containerPort=8080,protocol=TCP"),
    ("Deployment", f"{CONTAINER}.volumeMounts", {"name": "numba-cache", "mountPath": "/tmp"},
     "mountPath=/tmp"),
    ("Service", "spec.ports", {"name": "again", "port": 443, "targetPort": "webhook"},
     "port=443,protocol=TCP"),
    ("ValidatingWebhookConfiguration", "webhooks", "copy", "name=validate-pod.elasticquota.dev"),
    ("MutatingWebhookConfiguration", "webhooks", "copy", "name=mutate-pod.elasticquota.dev"),
]  # fmt: skip


def versions_of(name: str) -> list[str]:
    """The ``-k`` options render ``name`` is validated with: the Makefile's, or its own version."""
    return ["-k", KUBE_VERSIONS[name]] if name in KUBE_VERSIONS else VERSIONS


def validate(
    manifests: list[Manifest], directory: Path, versions: list[str] = VERSIONS
) -> subprocess.CompletedProcess[str]:
    """``validate_manifests.py`` with ``versions`` (the Makefile's) on the manifests, as one
    file."""
    path = directory / "rendered.yaml"
    path.write_text(yaml.safe_dump_all(manifests))
    script = ROOT / "manifests" / "tools" / "validate_manifests.py"
    command = [sys.executable, str(script), *versions, str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def render(name: str) -> list[Manifest]:
    return helm_template("--kube-version", KUBE_VERSIONS.get(name, "1.25.0"), *RENDERS[name])


def object_of(manifests: list[Manifest], kind: str) -> Manifest:
    (found,) = [body for body in manifests if body["kind"] == kind]
    return found


def parent_of(body: Manifest, path: str) -> tuple[Any, str]:
    """The object holding the list at ``path`` (``spec.ports``, ``...containers.0.env``) and the
    list's field name."""
    *parents, field = path.split(".")
    parent: Any = body
    for part in parents:
        parent = parent[int(part)] if part.isdigit() else parent[part]
    return parent, field


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("ERROR")]


def test_the_makefile_validates_the_renders_tested_here() -> None:
    assert VERSIONS[0] == "-k" and len(VERSIONS) >= 2
    recipe = MAKEFILE.split("\ncheck-chart:")[1].split("\n\n")[0]
    templates = re.findall(
        r"\$\(HELM\) template eq \$\(CHART\) ([^>]*)>", recipe.replace("\\\n", "")
    )
    made = [" ".join(options.replace("$(CHART)", str(CHART)).split()) for options in templates]
    expected = [
        " ".join(["--namespace eq-system --kube-version", KUBE_VERSIONS.get(name, "1.25.0"), *opts])
        for name, opts in RENDERS.items()
    ]
    assert sorted(made) == sorted(expected)


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_the_chart_renders_pass(name: str, tmp_path: Path) -> None:
    done = validate(render(name), tmp_path, versions_of(name))
    assert done.returncode == 0 and errors(done) == [], done.stdout + done.stderr
    versions = ", ".join(versions_of(name)[1::2])
    assert f" objects valid (strict) against Kubernetes {versions}" in done.stdout


@pytest.mark.parametrize(("kind", "path", "change", "key"), DUPLICATES)
def test_a_key_held_twice_is_refused_naming_the_list_and_the_key(
    kind: str, path: str, change: Any, key: str, tmp_path: Path
) -> None:
    manifests = render("default")
    parent, field = parent_of(object_of(manifests, kind), path)
    if change == "copy":
        (entry,) = [each for each in parent[field] if each["name"] == key.partition("=")[2]]
        parent[field].append(copy.deepcopy(entry))
    elif isinstance(change, list):
        parent[field] = change
    else:
        parent[field].append(change)
    done = validate(manifests, tmp_path)
    body = object_of(manifests, kind)
    namespace = f"{body['metadata']['namespace']}/" if "namespace" in body["metadata"] else ""
    listed = re.sub(r"\.(\d+)", r"[\1]", path)
    named = (
        f"ERROR {tmp_path / 'rendered.yaml'}: {body['apiVersion']} {kind} "
        f"{namespace}{body['metadata']['name']}: {listed}: [{key}] twice "
        f"(entries {{first}} and {len(parent[field]) - 1}); Kubernetes merges this list by "
    )
    assert done.returncode == 1 and len(errors(done)) == 1, done.stdout
    fields = dict(each.split("=") for each in key.split(","))
    first = next(
        index
        for index, entry in enumerate(parent[field])
        if all(str(entry.get(name, "TCP")) == value for name, value in fields.items())
    )
    assert errors(done)[0].startswith(named.format(first=first)), done.stdout
    assert done.stdout.rstrip().endswith("; 1 error(s)"), done.stdout


def test_a_port_number_for_tcp_and_udp_and_repeated_rules_pass(tmp_path: Path) -> None:
    manifests = render("default")
    (container,) = object_of(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    container["ports"].append({"name": "udp", "containerPort": 8080, "protocol": "UDP"})
    service = object_of(manifests, "Service")
    service["spec"]["ports"].append({"name": "udp", "port": 443, "protocol": "UDP"})
    role = object_of(manifests, "Role")
    role["rules"].append(copy.deepcopy(role["rules"][0]))
    done = validate(manifests, tmp_path)
    assert done.returncode == 0 and errors(done) == [], done.stdout + done.stderr
