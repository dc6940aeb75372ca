"""``elastic-quota usage users|groups``: the per-quota usage of users and groups under their
limits, as a table (each subject's quotas as a tree, the top first) or as ``plan -o json``'s
``users`` / ``groups`` section; ``-n`` for one subject; one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from user_limit_cluster import seed_cluster, user_pod

from elasticquota.core.keys import ANNO_USER_LIMITS
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import load_paths
from elasticquota.plan.usage import UnknownSubjectError, render_usage, usage_section

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

ORG_LIMITS = """
- limit: "sue at org"
  users: ["sue"]
  maxresources: {cpu: 8}
  maxapplications: 3
"""
TEAM_LIMITS = '[{"users": ["sue"], "maxresources": {"cpu": "5"}, "maxapplications": 2}]'


def test_the_json_is_plans_users_section_for_one_user_at_every_quota_of_the_path(
    k8s: type[K8s], write: Writer, run_cli: CliRunner
) -> None:
    team = k8s.quota(
        "team", {"cpu": "50"}, {"cpu": "50", "memory": "500Gi"}, parent="org",
        annotations={ANNO_USER_LIMITS: TEAM_LIMITS},
    )  # fmt: skip
    org = k8s.quota(
        "org", {"cpu": "100"}, {"cpu": "100", "memory": "1000Gi"}, is_parent=True,
        annotations={ANNO_USER_LIMITS: ORG_LIMITS},
    )  # fmt: skip
    path = write(
        k8s.node("n1", {"cpu": "200", "memory": "2000Gi"}),
        org,
        team,
        user_pod(k8s, "sue-1", "sue", ["dev"], "4", "1Gi", app="sweep"),
        user_pod(k8s, "bob-1", "bob", [], "1", "1Gi"),
    )
    result = run_cli("usage", "users", "sue", "-o", "json", "-f", path)
    assert result.code == 0, result.err
    assert result.json() == {
        "apiVersion": "elastic-quota.cli/v1",
        "kind": "UserUsage",
        "users": {
            "sue": {
                "team": {
                    "used": {"cpu": "4", "memory": "1Gi", "pods": "1"},
                    "applications": 1,
                    "maxResources": {"cpu": "5"},
                    "maxApplications": 2,
                    "limit": "#1",
                },
                "org": {
                    "used": {"cpu": "4", "memory": "1Gi", "pods": "1"},
                    "applications": 1,
                    "maxResources": {"cpu": "8"},
                    "maxApplications": 3,
                    "limit": "sue at org",
                },
            }
        },
    }
    plan = run_cli("plan", "-o", "json", "-f", path).json()
    assert result.json()["users"]["sue"] == plan["users"]["sue"]  # the same contract
    everyone = run_cli("usage", "users", "-o", "json", "-f", path).json()
    assert everyone["users"] == plan["users"]

    table = run_cli("usage", "users", "-f", path)
    assert table.code == 0, table.err
    rows = table.out.splitlines()
    assert rows[0].startswith("USER / GROUP")
    sue = [row for row in rows if row.startswith("user sue")]
    assert sue[0].split()[2] == "org"  # the top quota first, its children indented below
    assert sue[1].split()[2] == "team" and "   team" in sue[1]
    assert "1/3" in sue[0] and "cpu 4/8" in sue[0]
    assert "1/2" in sue[1] and "cpu 4/5" in sue[1]
    assert any(row.startswith("user bob") for row in rows)


def test_groups_of_the_seed_example_and_one_group_by_name(
    k8s: type[K8s], write: Writer, run_cli: CliRunner
) -> None:
    path = seed_cluster(k8s, write)
    result = run_cli("usage", "groups", "-o", "json", "-f", path)
    assert result.code == 0, result.err
    groups = result.json()["groups"]
    assert set(groups) == {"development", "test", "*"}
    assert groups["*"]["team"]["used"] == {"cpu": "5", "memory": "45Gi", "pods": "5"}
    assert groups["*"]["team"]["limit"] == "group catch all"

    one = run_cli("usage", "groups", "development", "-f", path)
    assert one.code == 0, one.err
    rows = one.out.splitlines()[1:]
    assert len(rows) == 1 and rows[0].startswith("group development")
    assert "specific groups" in rows[0] and "cpu 4/10" in rows[0]


def test_an_unknown_name_is_a_one_line_error(
    k8s: type[K8s], write: Writer, run_cli: CliRunner
) -> None:
    result = run_cli("usage", "users", "nosuch", "-f", seed_cluster(k8s, write))
    assert result.code == 1
    assert result.out == ""
    assert result.err == (
        "error: user nosuch has no usage and no limit at any quota (names are case-sensitive)\n"
    )


def test_an_unreachable_cluster_is_a_one_line_error(tmp_path: Path, run_cli: CliRunner) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n",
        encoding="utf-8",
    )
    for command in (["usage", "users"], ["explain", "default/p"]):
        result = run_cli(*command, "--kubeconfig", kubeconfig)
        assert result.code == 4  # unreachable (docs/cli.md, exit codes)
        assert result.err.startswith("error: cannot reach the API server: ")
        assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_a_cluster_without_limits_says_so(k8s: type[K8s], write: Writer) -> None:
    path = write(k8s.quota("team", {"cpu": "1"}, {"cpu": "1"}))
    snapshot = compute_plan(load_paths([path])).snapshot
    assert render_usage(snapshot, "users") == "no users with usage or a limit\n"
    assert usage_section(snapshot, "groups") == {"groups": {}}
    try:
        usage_section(snapshot, "users", "sue")
    except UnknownSubjectError as error:
        assert "user sue" in str(error)
    else:
        raise AssertionError("an unknown user must be refused")
