"""``-o table|wide|json|yaml`` through the entry point, and the documents' contract (docs/cli.md):
``apiVersion`` and ``kind`` first, the same document in JSON and YAML, the keys documented.

``tree`` reads an API server (``ApiServerStub`` answering the quota list, as the operator left
it); the namespace it shows is the context's, ``-n``'s or every one with ``-A``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_run import EXAMPLES, QUOTAS_PATH, ApiServerStub, kubeconfig, quota_list, run
from plan_document import PLAN_DOCUMENT_KEYS

from elasticquota.cli.output import API_VERSION
from elasticquota.core import keys

pytestmark = pytest.mark.timeout(300)

QUOTA_KEYS = [
    "namespace", "tree", "parent", "isParent", "min", "max", "effectiveMin", "sharedWeight",
    "request", "childRequest", "limitedRequest", "used", "runtime", "nonPreemptibleRequest",
    "nonPreemptibleUsed",
]  # fmt: skip


def both(*argv: str | Path) -> dict[str, Any]:
    """The JSON document of ``argv``, checked to be the YAML one too."""
    as_json = run(*argv, "-o", "json")
    as_yaml = run(*argv, "-o", "yaml")
    assert as_json.code == as_yaml.code == 0, as_json.err + as_yaml.err
    document: dict[str, Any] = json.loads(as_json.out)
    assert yaml.safe_load(as_yaml.out) == document
    assert list(document)[:2] == ["apiVersion", "kind"]
    assert document["apiVersion"] == API_VERSION
    return document


def test_plan_documents() -> None:
    document = both("plan", "-f", EXAMPLES)
    assert document["kind"] == "Plan"
    assert tuple(document) == PLAN_DOCUMENT_KEYS
    wide, table = run("plan", "-f", EXAMPLES, "-o", "wide"), run("plan", "-f", EXAMPLES)
    assert wide.out == table.out and table.out.startswith("QUOTA")


def test_explain_documents() -> None:
    document = both("explain", "analytics/report-3", "-f", EXAMPLES)
    assert document["kind"] == "PodExplanation"
    assert list(document) == [
        "apiVersion", "kind", "pod", "quota", "state", "verdict", "notes", "heldBy", "preemption",
        "keptByBudgets", "path", "advice",
    ]  # fmt: skip
    assert document["pod"] == "analytics/report-3"
    assert document["path"][0]["quota"] == document["quota"]
    assert set(document["path"][0]) == {"quota", "runtime", "used", "request"}
    table = run("explain", "report-3", "-n", "analytics", "-f", EXAMPLES)
    assert table.out.startswith("pod analytics/report-3: ")


def test_usage_documents(tmp_path: Path) -> None:
    users = both("usage", "users", "-f", EXAMPLES)
    groups = both("usage", "groups", "-f", EXAMPLES)
    assert (users["kind"], list(users)[2:]) == ("UserUsage", ["users"])
    assert (groups["kind"], list(groups)[2:]) == ("GroupUsage", ["groups"])


def quota(name: str, namespace: str, parent: str = "", is_parent: bool = False) -> dict[str, Any]:
    labels = {keys.LABEL_PARENT: parent} if parent else {}
    if is_parent:
        labels[keys.LABEL_IS_PARENT] = "true"
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {keys.ANNO_RUNTIME: '{"cpu":"2"}'},
        },
        "spec": {"min": {"cpu": "2"}, "max": {"cpu": "4"}},
        "status": {"used": {"cpu": "1"}},
    }


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    """A kubeconfig whose context's namespace is ``a``, on a server holding ``org`` (namespace
    platform) with children ``team-a`` (namespace a) and ``team-b`` (namespace b)."""
    objects = quota_list(
        quota("org", "platform", is_parent=True),
        quota("team-a", "a", parent="org"),
        quota("team-b", "b", parent="org"),
    )
    with ApiServerStub(200, {}, paths={QUOTAS_PATH: (200, objects)}) as url:
        yield kubeconfig(tmp_path / "config", {"c": url}, namespaces={"c": "a"})


def test_tree_shows_the_contexts_namespace_with_the_quotas_above(cluster: Path) -> None:
    mine = both("tree", "--kubeconfig", cluster)
    assert mine["kind"] == "QuotaTree"
    assert list(mine)[2:] == ["namespace", "trees", "quotas"]
    assert mine["namespace"] == "a"
    assert list(mine["quotas"]) == ["org", "team-a"]
    assert list(mine["quotas"]["team-a"]) == QUOTA_KEYS
    assert mine["quotas"]["team-a"]["used"] == {"cpu": "1"}
    assert mine["trees"] == {"": {"total": {}, "profile": ""}}
    other = both("tree", "--kubeconfig", cluster, "-n", "b")
    assert list(other["quotas"]) == ["org", "team-b"]
    every = both("tree", "--kubeconfig", cluster, "-A", "-n", "b")
    assert (every["namespace"], list(every["quotas"])) == (None, ["org", "team-a", "team-b"])
    table = run("tree", "--kubeconfig", cluster).out.splitlines()
    assert [row.split()[0] for row in table[2:]] == ["org", "team-a"]


def test_tree_wide_names_the_namespace_of_every_quota(cluster: Path) -> None:
    rows = [
        row.split()
        for row in run("tree", "-A", "-o", "wide", "--kubeconfig", cluster).out.splitlines()
    ]
    assert rows[0] == [
        "NAMESPACE", "QUOTA", "TREE", "RESOURCE", "MIN", "MAX", "REQUEST", "USED", "RUNTIME",
        "NP-REQUEST", "NP-USED",
    ]  # fmt: skip
    assert rows[1:] == [
        ["platform", "org", "default", "cpu", "2", "4", "-", "1", "2", "-", "-"],
        ["a", "team-a", "default", "cpu", "2", "4", "-", "1", "2", "-", "-"],
        ["b", "team-b", "default", "cpu", "2", "4", "-", "1", "2", "-", "-"],
    ]


def test_a_namespace_without_quotas_says_so_on_stderr(cluster: Path) -> None:
    result = run("tree", "--kubeconfig", cluster, "-n", "empty")
    assert result.code == 0
    assert result.out.splitlines()[0].startswith("QUOTA")
    assert result.err == "no quotas in namespace empty (-A: every namespace)\n"


def examples_with_user_limits(directory: Path) -> Path:
    """The examples with a user limit on each top-level quota: usage is tracked only in the trees
    that have one."""
    limit = '[{"users": ["*"], "maxapplications": 100}]'
    for source in EXAMPLES.glob("*.yaml"):
        documents = list(yaml.safe_load_all(source.read_text(encoding="utf-8")))
        for body in documents:
            if body and body["kind"] == "ElasticQuota" and body["metadata"]["name"] in TOP_LEVEL:
                body["metadata"].setdefault("annotations", {})[keys.ANNO_USER_LIMITS] = limit
        (directory / source.name).write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return directory


TOP_LEVEL = ("engineering", "analytics")


def test_usage_rows_are_those_of_the_namespace_figures_of_the_whole_cluster(
    tmp_path: Path,
) -> None:
    limited = examples_with_user_limits(tmp_path)
    every = run("usage", "users", "-f", limited, "-o", "json").json()["users"]["nobody"]
    mine = run("usage", "users", "-f", limited, "-n", "analytics", "-o", "json").json()
    assert mine["users"] == {"nobody": {"analytics": every["analytics"]}}
    assert "engineering" in every  # a parent counts its children's pods, shown with -A
    missing = run("usage", "users", "nobody", "-f", limited, "-n", "nowhere")
    assert missing.code == 1
    assert missing.one_line_error().endswith("in namespace nowhere (-A: every namespace)")
