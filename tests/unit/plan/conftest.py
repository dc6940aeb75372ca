"""Helpers for the ``plan`` tests: raw manifests as dicts, written to files, and the CLI run
in-process. Test modules import the helper types from here under ``TYPE_CHECKING`` only (several
``conftest`` modules exist, so a runtime ``import conftest`` would be ambiguous).

``k8s`` builds the Kubernetes objects ``plan`` reads (as a user would write them: quantities as
strings, labels and annotations under Koordinator's keys); ``write`` puts documents in a YAML file;
``run_cli`` calls ``elasticquota.cli.main`` and returns the exit code with what it printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_result import CliResult
from profile_bodies import profile_body

from elasticquota.cli import main
from elasticquota.core.keys import (
    ANNO_NAMESPACES,
    ANNO_SHARED_WEIGHT,
    LABEL_ALLOW_LENT,
    LABEL_IS_PARENT,
    LABEL_PARENT,
    POD_LABEL_PREEMPTIBLE,
    POD_LABEL_QUOTA,
)

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

Manifest = dict[str, Any]


class K8s:
    """Builders of raw manifests (quantities as strings, as in YAML)."""

    @staticmethod
    def quota(
        name: str,
        min: Mapping[str, Any] | None = None,
        max: Mapping[str, Any] | None = None,
        *,
        namespace: str | None = None,
        parent: str | None = None,
        is_parent: bool = False,
        allow_lent: bool = True,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        shared_weight: Mapping[str, Any] | None = None,
        namespaces: Iterable[str] | None = None,
        api_version: str = "scheduling.sigs.k8s.io/v1alpha1",
    ) -> Manifest:
        all_labels = dict(labels or {})
        if parent is not None:
            all_labels[LABEL_PARENT] = parent
        if is_parent:
            all_labels[LABEL_IS_PARENT] = "true"
        if not allow_lent:
            all_labels[LABEL_ALLOW_LENT] = "false"
        all_annotations = dict(annotations or {})
        if shared_weight is not None:
            all_annotations[ANNO_SHARED_WEIGHT] = json.dumps(dict(shared_weight))
        if namespaces is not None:
            all_annotations[ANNO_NAMESPACES] = json.dumps(list(namespaces))
        return {
            "apiVersion": api_version,
            "kind": "ElasticQuota",
            "metadata": {
                "name": name,
                "namespace": namespace if namespace is not None else name,
                "labels": all_labels,
                "annotations": all_annotations,
            },
            "spec": {"min": dict(min or {}), "max": dict(max or {})},
        }

    @staticmethod
    def pod(
        name: str,
        namespace: str,
        requests: Mapping[str, Any] | None = None,
        *,
        node: str = "",
        phase: str | None = None,
        priority: int | None = None,
        quota: str | None = None,
        preemptible: bool = True,
        start_time: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Manifest:
        all_labels = dict(labels or {})
        if quota is not None:
            all_labels[POD_LABEL_QUOTA] = quota
        if not preemptible:
            all_labels[POD_LABEL_PREEMPTIBLE] = "false"
        spec: dict[str, Any] = {
            "containers": [
                {"name": "main", "image": "app:1", "resources": {"requests": dict(requests or {})}}
            ]
        }
        if node:
            spec["nodeName"] = node
        if priority is not None:
            spec["priority"] = priority
        status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
        if start_time is not None:
            status["startTime"] = start_time
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
            "spec": spec,
            "status": status,
        }

    @staticmethod
    def node(
        name: str, allocatable: Mapping[str, Any], labels: Mapping[str, str] | None = None
    ) -> Manifest:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"allocatable": dict(allocatable)},
        }

    profile = staticmethod(profile_body)


@pytest.fixture
def examples() -> Path:
    """The bundled example cluster (``examples/``)."""
    return EXAMPLES


@pytest.fixture
def k8s() -> type[K8s]:
    """Builders of raw manifests."""
    return K8s


Writer = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """``write(*documents, name="manifests.yaml")``: one multi-document YAML file in tmp_path."""

    def write_documents(*documents: Any, name: str = "manifests.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
        return path

    return write_documents


CliRunner = Callable[..., CliResult]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> CliRunner:
    """``run_cli("plan", "-f", path, ...)``: ``elasticquota.cli.main`` in-process."""

    def run(*argv: str | Path) -> CliResult:
        code = main([str(arg) for arg in argv])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def plan_json(run_cli: CliRunner) -> Callable[..., Any]:
    """``plan_json(*paths, *extra_args)``: the parsed ``plan -o json`` document (exit code 0)."""

    def run(*paths: str | Path, args: Iterable[str] = ()) -> Any:
        argv: list[str | Path] = ["plan", "-o", "json"]
        for path in paths:
            argv += ["-f", path]
        result = run_cli(*argv, *args)
        assert result.code == 0, result.err
        return result.json()

    return run


@pytest.fixture
def healthy(k8s: type[K8s]) -> list[dict[str, Any]]:
    """A node, a well-formed quota and its running pod: what must survive every breakage."""
    return [
        k8s.node("n1", {"cpu": "8", "memory": "32Gi"}),
        k8s.quota("healthy", {"cpu": "2"}, {"cpu": "8"}),
        k8s.pod("runner", "healthy", {"cpu": "1"}, node="n1"),
    ]


@pytest.fixture
def plan_with(
    run_cli: CliRunner, write: Writer, healthy: list[dict[str, Any]]
) -> Any:  # returns a function
    """``plan_with(*broken_documents)``: the JSON document; asserts exit 0 and that the healthy
    quota was still computed."""

    def run(*documents: Any, raw: str | None = None) -> Any:
        path = write(*healthy, *documents)
        if raw is not None:
            path.write_text(path.read_text() + "---\n" + raw)
        result = run_cli("plan", "-f", path, "-o", "json")
        assert result.code == 0, result.err
        document = result.json()
        quota = document["quotas"]["healthy"]
        assert (quota["request"], quota["used"]) == ({"cpu": "1"}, {"cpu": "1"})
        assert quota["runtime"]["cpu"] == "1"
        return document

    return run
