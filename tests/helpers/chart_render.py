"""The repository's Helm chart rendered with ``helm template`` (no cluster), for the chart tests
of every tier.

helm is ``$HELM``, else the pinned one of ``make helm`` (``.venv/tools``), else one on the PATH.
Without it the tests that render fail, they are never skipped: ``make test`` installs it first.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from elasticquota.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "elastic-quota-operator"
PINNED_HELM = ROOT / ".venv" / "tools" / "node_modules" / ".bin" / "helm"
#: A rendered (or applied) Kubernetes object.
Manifest = dict[str, Any]
#: An entry of templates/_env.tpl that passes a value on: its variable and the value's path.
VALUE_OF_VARIABLE = re.compile(
    r"- name: ELASTIC_QUOTA_(?P<variable>[A-Z_]+)\s*\n\s*value: \{\{ (?:toJson )?"
    r"(?P<root>\$op|\.Values)\.(?P<path>[A-Za-z.]+)"
)


def chart_values() -> dict[str, str]:
    """``operator.evictionRate: eviction_rate`` for every value the Deployment passes on (found in
    ``templates/_env.tpl``): the value's path and the operator's setting it feeds."""
    template = (CHART / "templates" / "_env.tpl").read_text()
    found = {}
    for match in VALUE_OF_VARIABLE.finditer(template):
        prefix = "operator." if match["root"] == "$op" else ""
        found[prefix + match["path"]] = match["variable"].lower()
    return found


@functools.cache
def values_schema() -> dict[str, Any]:
    """The chart's values.schema.json."""
    schema: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return schema


def value_schema(path: str) -> dict[str, Any]:
    """The part of values.schema.json that checks the value at ``path`` (``operator.leaseName``)."""
    schema = values_schema()
    for part in path.split("."):
        schema = schema["properties"][part]
    return schema


class TemplateError(AssertionError):
    """helm refused to render (a test that expects it catches this; the others fail with it)."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr


def find_helm() -> str | None:
    """``$HELM``, else the helm ``make`` pins under .venv/tools, else one on the PATH."""
    for candidate in (os.environ.get("HELM"), str(PINNED_HELM) if PINNED_HELM.exists() else None):
        if candidate:
            return candidate
    return shutil.which("helm")


def helm() -> str:
    """The helm to run; the test fails without one."""
    found = find_helm()
    if found is None:
        pytest.fail("helm not found ($HELM, .venv/tools, PATH): run `make helm`", pytrace=False)
    return found


def helm_template(
    *options: str,
    values: Mapping[str, Any] | None = None,
    release: str = "eq",
    namespace: str = "eq-system",
) -> list[Manifest]:
    """The objects the chart renders with ``options`` (``--show-only``, ``--set``, ``--values``)
    and then ``values`` (written as JSON, which is YAML with its types kept); ``TemplateError``
    with what helm said when it refuses."""
    command = [helm(), "template", release, str(CHART), "--namespace", namespace, *options]
    with tempfile.TemporaryDirectory() as directory:
        if values is not None:
            path = Path(directory, "values.json")
            path.write_text(json.dumps(values))
            command += ["--values", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise TemplateError(
            f"{' '.join(command)} exited with {done.returncode}\n"
            f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}",
            done.stderr,
        )
    return [body for body in yaml.safe_load_all(done.stdout) if body]


#: What the kubelet fills the Deployment's ``fieldRef`` variables with, for the tests.
POD_FIELDS = {"metadata.name": "eq-operator-0"}


def operator_environment(manifests: list[Manifest], namespace: str = "eq-system") -> dict[str, str]:
    """The ``ELASTIC_QUOTA_*`` variables of the rendered Deployment, its pod's fields filled in
    (name ``POD_FIELDS``, namespace ``namespace``)."""
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    fields = {**POD_FIELDS, "metadata.namespace": namespace}
    return {
        each["name"]: each["value"]
        if "value" in each
        else fields[each["valueFrom"]["fieldRef"]["fieldPath"]]
        for each in container["env"]
        if each["name"].startswith("ELASTIC_QUOTA_")
    }


def operator_settings(environment: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The operator's ``Settings`` from exactly these variables (none of the test process's own),
    as ``elastic-quota run`` reads them: a refused one raises pydantic's ValidationError."""
    for name in [name for name in os.environ if name.startswith("ELASTIC_QUOTA_")]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return Settings.from_sources()


def helm_notes(values: Mapping[str, Any], namespace: str = "eq-system") -> str:
    """What ``helm install`` prints after installing (NOTES.txt), rendered without a cluster:
    ``helm template`` leaves NOTES.txt out, so a copy of the chart has it as a named template
    rendered into a ConfigMap."""
    with tempfile.TemporaryDirectory() as directory:
        chart = Path(directory, "chart")
        shutil.copytree(CHART, chart)
        notes = chart / "templates" / "NOTES.txt"
        Path(chart, "templates", "_notes_under_test.tpl").write_text(
            '{{- define "notes-under-test" -}}\n' + notes.read_text() + "\n{{- end }}\n"
        )
        notes.unlink()
        Path(chart, "templates", "notes-under-test.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-under-test\ndata:\n"
            '  notes: {{ include "notes-under-test" . | toJson }}\n'
        )
        path = Path(directory, "values.json")
        path.write_text(json.dumps(values))
        command = [helm(), "template", "eq", str(chart), "--namespace", namespace]
        command += ["--show-only", "templates/notes-under-test.yaml", "--values", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise TemplateError(f"{' '.join(command)}: {done.stderr}", done.stderr)
    notes_text: str = yaml.safe_load(done.stdout)["data"]["notes"]
    return notes_text
