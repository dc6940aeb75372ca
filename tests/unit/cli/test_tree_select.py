"""``tree QUOTA`` (``cli.tree_command.select``): that quota, its subtree and the path above it;
``koordinator-root-quota``'s subtree is the default tree (not the profile trees' roots, which
hang under it too)."""

from __future__ import annotations

from typing import Any

from elasticquota.cli.tree_command import select
from elasticquota.core import keys
from elasticquota.plan.live import live_snapshot


def quota(name: str, namespace: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"max": {"cpu": "4"}},
    }


PARENT = {keys.LABEL_IS_PARENT: "true"}
OBJECTS = [
    quota(keys.ROOT_QUOTA, "koordinator-system", **PARENT),
    quota("dept", "quotas", **PARENT),
    quota("team", "team", **{keys.LABEL_PARENT: "dept"}),
    quota("solo", "solo"),
    quota("pool-root", "pools", **PARENT, **{keys.LABEL_TREE_ID: "7", keys.LABEL_IS_ROOT: "true"}),
    quota("pool-team", "pools", **{keys.LABEL_PARENT: "pool-root", keys.LABEL_TREE_ID: "7"}),
]


def test_a_quota_with_its_subtree_and_the_path_above() -> None:
    shown = select(live_snapshot(OBJECTS), None, "dept")
    assert set(shown.quotas) == {"dept", "team"}


def test_the_root_quota_shows_the_default_tree() -> None:
    shown = select(live_snapshot(OBJECTS), None, keys.ROOT_QUOTA)
    assert set(shown.quotas) == {keys.ROOT_QUOTA, "dept", "team", "solo"}
    assert set(shown.totals) == {""}
