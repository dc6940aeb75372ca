"""The Helm chart's aggregated ClusterRoles against the real API server: the cluster's aggregation
controller adds them to the built-in view and edit roles, so namespace viewers read quotas and
profiles, and editors change them.
"""

from __future__ import annotations

import uuid

import pytest
from chart_helpers import aggregated, applied, can_i, kubectl, render, run
from harness import eventually

pytestmark = pytest.mark.timeout(600)


async def test_namespace_viewers_read_and_editors_change_quotas(namespace: str) -> None:
    """The chart's aggregated ClusterRoles, applied: the cluster's aggregation controller adds
    them to the built-in view and edit roles, so a user bound to `view` in a namespace may list
    its ElasticQuotas and profiles (not change them), one bound to `edit` may create them (not
    their status, the operator's)."""
    release = f"eq-agg-{uuid.uuid4().hex[:6]}"
    values = {"rbac": {"aggregateToEdit": True}}  # view is on by default, edit is opt-in
    roles = [body for body in render(namespace, values, release=release) if aggregated(body)]
    assert sorted(body["metadata"]["name"] for body in roles) == [
        f"{release}-elastic-quota-operator-edit", f"{release}-elastic-quota-operator-view"
    ]  # fmt: skip
    quotas = "elasticquotas.scheduling.sigs.k8s.io"
    profiles = "elasticquotaprofiles.quota.koordinator.sh"
    viewer, editor = f"{release}-viewer", f"{release}-editor"
    with applied(roles):
        for user, role in ((viewer, "view"), (editor, "edit")):
            run(
                kubectl(), "create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}",
                f"--user={user}", "-n", namespace,
            )  # fmt: skip

        def aggregated_in() -> bool:
            return can_i("list", quotas, viewer, namespace) and can_i(
                "create", quotas, editor, namespace
            )

        await eventually(aggregated_in, timeout=60, what="the roles aggregated into view/edit")
        assert can_i("watch", profiles, viewer, namespace)
        assert not can_i("create", quotas, viewer, namespace)
        assert not can_i("list", quotas, viewer, "default"), "view was granted beyond its namespace"
        assert can_i("delete", profiles, editor, namespace)
        assert not can_i("patch", quotas, editor, namespace, "status")
