"""``tree -n NS`` for a user who may list quotas in that namespace only (bound to ``view`` there,
which the chart's aggregated role extends to quotas): the cluster-wide list is refused (403), so
the namespace's own quotas are drawn without the quotas above them, and stderr says why; any
other refusal is still an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_run import QUOTAS_PATH, ApiServerStub, kubeconfig, quota_list, run, status
from quota_bodies import quota_body

from elasticquota.cli import errors
from elasticquota.core import keys

pytestmark = pytest.mark.timeout(300)

TEAM_QUOTAS_PATH = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/team/elasticquotas"
REFUSED = (
    'elasticquotas.scheduling.sigs.k8s.io is forbidden: User "sue" cannot list resource '
    '"elasticquotas" in API group "scheduling.sigs.k8s.io" at the cluster scope'
)


def team_quota(name: str, parent: str) -> dict[str, Any]:
    """A quota as the operator left it: figures in its annotations, its parent in another
    namespace."""
    figures = {keys.ANNO_REQUEST: '{"cpu":"3"}', keys.ANNO_RUNTIME: '{"cpu":"2"}'}
    return quota_body(
        name,
        min={"cpu": "1"},
        max={"cpu": "4"},
        parent=parent,
        annotations=figures,
        status={"used": {"cpu": "2"}},
    )


def refused(code: int, reason: str) -> tuple[int, dict[str, Any]]:
    return code, {**status(code, reason), "message": REFUSED}


def tree(tmp_path: Path, cluster_wide: tuple[int, Any], *argv: str) -> Any:
    team = quota_list(team_quota("team", "org"), team_quota("team-batch", "team"))
    paths = {QUOTAS_PATH: cluster_wide, TEAM_QUOTAS_PATH: (200, team)}
    with ApiServerStub(404, status(404, "NotFound"), paths=paths) as url:
        config = kubeconfig(tmp_path / "c", {"c": url})
        return run("tree", "-n", "team", "--kubeconfig", config, *argv)


def test_a_refused_cluster_wide_list_draws_the_namespaces_own_quotas(tmp_path: Path) -> None:
    result = tree(tmp_path, refused(403, "Forbidden"), "-o", "wide")
    assert result.code == 0, result.err
    rows = [line.split() for line in result.out.splitlines()[1:]]
    assert [row[:4] for row in rows] == [
        ["team", "team", "default", "cpu"],
        ["team", "team-batch", "default", "cpu"],
    ]
    assert rows[0][4:9] == ["1", "4", "3", "2", "2"]  # min max request used runtime
    assert result.err == (
        "note: team's quotas only: this user may not list ElasticQuotas across the cluster (403), "
        "so the quotas above them, in other namespaces, are not shown\n"
    )


def test_the_table_draws_them_at_the_top_of_their_tree(tmp_path: Path) -> None:
    result = tree(tmp_path, refused(403, "Forbidden"))
    assert result.code == 0, result.err
    rows = [line.split()[:2] for line in result.out.splitlines()[2:] if line.strip()]
    assert rows == [["team", "cpu"], ["team-batch", "cpu"]]
    assert result.out.splitlines()[3].startswith("    team-batch")  # under its parent


def test_the_document_holds_what_could_be_read(tmp_path: Path) -> None:
    result = tree(tmp_path, refused(403, "Forbidden"), "-o", "json")
    assert result.code == 0, result.err
    assert sorted(result.json()["quotas"]) == ["team", "team-batch"]
    assert result.err.startswith("note: team's quotas only")


def test_with_the_cluster_wide_list_allowed_nothing_is_said(tmp_path: Path) -> None:
    everything = quota_list(team_quota("team", ""), team_quota("team-batch", "team"))
    result = tree(tmp_path, (200, everything), "-o", "wide")
    assert (result.code, result.err) == (0, "")


def test_an_unauthenticated_user_is_still_refused(tmp_path: Path) -> None:
    result = tree(tmp_path, refused(401, "Unauthorized"))
    assert result.code == errors.EXIT_FORBIDDEN
    assert "401 Unauthorized listing elasticquotas.scheduling.sigs.k8s.io" in result.err
