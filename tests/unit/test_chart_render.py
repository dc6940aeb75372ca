"""What the chart renders with ``helm template`` and no cluster (as Argo CD and Flux render it).

* The CRDs are templates (``helm upgrade`` updates them), their specs exactly the repository's
  ``crds/``; ``crds.keep`` puts ``helm.sh/resource-policy: keep`` on them (``helm uninstall``
  leaves them and the users' quotas), ``crds.install=false`` renders none.

With helm: ``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing
without it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_tools import ROOT, find_helm

CHART = ROOT / "manifests" / "helm" / "elastic-quota-operator"
CRDS = ROOT / "crds"
KEEP = "helm.sh/resource-policy"

Manifest = dict[str, Any]


def helm_template(values: Manifest, tmp_path: Path) -> list[Manifest]:
    helm = find_helm()
    if helm is None:
        pytest.fail("helm not found ($HELM, .venv/tools, PATH): run `make helm`", pytrace=False)
    path = tmp_path / "values.json"
    path.write_text(json.dumps(values))  # YAML, typed
    done = subprocess.run(
        [helm, "template", "eq", str(CHART), "--namespace", "eq-system", "--values", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [body for body in yaml.safe_load_all(done.stdout) if body]


def crds_of(manifests: list[Manifest]) -> dict[str, Manifest]:
    return {
        body["metadata"]["name"]: body
        for body in manifests
        if body["kind"] == "CustomResourceDefinition"
    }


def source_crds() -> dict[str, Manifest]:
    found = [yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))]
    return {body["metadata"]["name"]: body for body in found}


def test_the_crds_are_templates_equal_to_crds_dir_and_kept_on_uninstall(tmp_path: Path) -> None:
    rendered = crds_of(helm_template({}, tmp_path))
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


def test_crds_keep_false_lets_uninstall_delete_them(tmp_path: Path) -> None:
    rendered = crds_of(helm_template({"crds": {"keep": False}}, tmp_path))
    assert len(rendered) == 2
    for name, crd in rendered.items():
        assert KEEP not in (crd["metadata"].get("annotations") or {}), name


def test_crds_install_false_renders_no_crd(tmp_path: Path) -> None:
    manifests = helm_template({"crds": {"install": False}}, tmp_path)
    assert crds_of(manifests) == {}
    assert any(body["kind"] == "Deployment" for body in manifests)
