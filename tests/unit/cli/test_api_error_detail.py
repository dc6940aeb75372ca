"""An error status of the API server says what was refused: the list that failed and the server's
own message (a 403's names the user, the resource and the scope), after the exit code's prefix.

A user whose RBAC allows some of the reads (her namespace's pods, not the cluster's nodes or
PriorityClasses) must learn which one to ask for; a cluster without the CRDs answers 404 on the
quota list, which a bare "404 Not Found" does not name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import QUOTAS_PATH, ApiServerStub, kubeconfig, quota_list, run, status

from elasticquota.cli import errors

pytestmark = pytest.mark.timeout(300)

EMPTY_LIST = {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}
PODS_PATH = "/api/v1/pods"
PODS_FORBIDDEN = (
    'pods is forbidden: User "sue" cannot list resource "pods" in API group "" at the cluster scope'
)

NOT_FOUND = "the server could not find the requested resource"


def forbidden(message: str) -> dict[str, object]:
    return {**status(403, "Forbidden"), "message": message}


def test_a_refused_list_is_named_with_the_servers_message(tmp_path: Path) -> None:
    paths = {QUOTAS_PATH: (200, quota_list()), PODS_PATH: (403, forbidden(PODS_FORBIDDEN))}
    with ApiServerStub(200, EMPTY_LIST, paths=paths) as url:
        result = run("explain", "team/pod", "--kubeconfig", kubeconfig(tmp_path / "c", {"c": url}))
    assert result.code == errors.EXIT_FORBIDDEN
    assert result.one_line_error() == (
        f"error: cannot read the cluster: 403 Forbidden listing pods: {PODS_FORBIDDEN} "
        "(check the credentials and RBAC of the kubeconfig's user)"
    )


def test_a_missing_resource_type_is_named(tmp_path: Path) -> None:
    """The quota CRD not installed (or a context that points at another cluster)."""
    missing = {**status(404, "NotFound"), "message": NOT_FOUND}
    with ApiServerStub(200, EMPTY_LIST, paths={QUOTAS_PATH: (404, missing)}) as url:
        result = run("tree", "-A", "--kubeconfig", kubeconfig(tmp_path / "c", {"c": url}))
    assert result.code == errors.EXIT_API
    assert result.one_line_error() == (
        "error: cannot read the cluster: 404 Not Found listing "
        f"elasticquotas.scheduling.sigs.k8s.io: {NOT_FOUND}"
    )
