"""plan.live.live_snapshot: the quota objects as the operator wrote them, as a renderable snapshot.

Rules: min and max come from the spec, request / child-request / runtime / non-preemptible figures
from the operator's annotations and used from ``status.used``; unreadable values show as absent and
never stop the view; the parent label (or its older alias) links quotas, a quota without one hangs
under the virtual root; a quota's tree is its ``tree-id`` label, else its parent's; the default
tree's total is the root quota's runtime, a profile tree's its root's ``total-resource``; every
tree that has quotas is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from quota_bodies import quota_body

from elasticquota.core import keys
from elasticquota.plan.live import live_snapshot
from elasticquota.plan.table import render_trees

GIB = 2**30


def quota(
    name: str,
    *,
    namespace: str = "team",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A quota as written, its spec as given (even one that is not a quota's spec)."""
    body = quota_body(
        name, namespace, labels=labels, annotations=annotations, uid=None, status=status
    )
    body["spec"] = dict(spec or {})
    return body


def test_figures_come_from_spec_annotations_and_status() -> None:
    body = quota(
        "a",
        spec={"min": {"cpu": "1"}, "max": {"cpu": "4", "memory": "8Gi"}},
        annotations={
            keys.ANNO_REQUEST: '{"cpu":"2"}',
            keys.ANNO_CHILD_REQUEST: '{"cpu":"500m"}',
            keys.ANNO_RUNTIME: '{"cpu":"3","memory":"1Gi"}',
            keys.ANNO_NON_PREEMPTIBLE_REQUEST: '{"cpu":"1"}',
            keys.ANNO_NON_PREEMPTIBLE_USED: '{"cpu":"250m"}',
            keys.ANNO_SHARED_WEIGHT: '{"cpu":"7"}',
        },
        status={"used": {"cpu": "1500m"}},
    )
    result = live_snapshot([body]).quotas["a"]

    assert (result.name, result.namespace) == ("a", "team")
    assert (result.min, result.max) == ({"cpu": 1000}, {"cpu": 4000, "memory": 8 * GIB})
    assert result.request == result.limited_request == {"cpu": 2000}
    assert result.child_request == {"cpu": 500}
    assert result.runtime == {"cpu": 3000, "memory": GIB}
    assert result.non_preemptible_request == {"cpu": 1000}
    assert result.non_preemptible_used == {"cpu": 250}
    assert result.shared_weight == {"cpu": 7000}
    assert result.used == {"cpu": 1500}
    assert not result.reserved


def test_a_quota_never_written_shows_empty_figures() -> None:
    result = live_snapshot([quota("a", spec={"max": {"cpu": "4"}})]).quotas["a"]
    assert (result.request, result.used, result.runtime) == ({}, {}, {})


@pytest.mark.parametrize(
    "broken",
    [
        {"annotations": {keys.ANNO_RUNTIME: "{not json"}},
        {"annotations": {keys.ANNO_REQUEST: '{"cpu":"lots"}'}},
        {"spec": {"min": {"cpu": "lots"}, "max": "not a map"}},
        {"status": {"used": {"cpu": "-"}}},
        {"status": {"used": ["cpu"]}},
    ],
    ids=["runtime-json", "request-quantity", "spec", "used-quantity", "used-not-a-map"],
)
def test_unreadable_values_show_as_absent(broken: dict[str, Any]) -> None:
    body = quota("a", **broken)
    result = live_snapshot([body, quota("b", spec={"max": {"cpu": "1"}})]).quotas
    bad = result["a"]
    assert {} in (bad.runtime, bad.request, bad.min, bad.used)
    assert result["b"].max == {"cpu": 1000}  # the others are read as usual


def test_reserved_quotas_are_marked() -> None:
    names = [keys.ROOT_QUOTA, keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA, "a"]
    snapshot = live_snapshot([quota(name) for name in names])
    assert {name for name, r in snapshot.quotas.items() if r.reserved} == set(keys.RESERVED_QUOTAS)


def test_parents_come_from_the_parent_label_else_the_virtual_root() -> None:
    snapshot = live_snapshot(
        [
            quota(keys.ROOT_QUOTA, labels={keys.LABEL_PARENT: ""}),
            quota("eng", labels={keys.LABEL_IS_PARENT: "true"}),
            quota("ml", labels={keys.LABEL_PARENT: "eng"}),
        ]
    )
    parents = {name: result.parent for name, result in snapshot.quotas.items()}
    assert parents == {keys.ROOT_QUOTA: "", "eng": keys.ROOT_QUOTA, "ml": "eng"}
    assert snapshot.quotas["eng"].is_parent and not snapshot.quotas["ml"].is_parent


def test_the_older_parent_label_is_read_as_an_alias() -> None:
    """As when the operator reads quotas (api.parse): ``parent-quota-name`` names the parent."""
    alias = keys.LABEL_PARENT_ALIASES[1]
    snapshot = live_snapshot(
        [
            quota("eng", labels={keys.LABEL_IS_PARENT: "true", keys.LABEL_TREE_ID: "7"}),
            quota("ml", labels={alias: "eng"}),
        ]
    )
    assert snapshot.quotas["ml"].parent == "eng"
    assert snapshot.quotas["ml"].tree == "7"


def test_a_quota_inherits_its_tree_from_its_ancestors() -> None:
    snapshot = live_snapshot(
        [
            quota("pool", labels={keys.LABEL_TREE_ID: "42", keys.LABEL_IS_ROOT: "true"}),
            quota("team", labels={keys.LABEL_PARENT: "pool"}),
            quota("sub", labels={keys.LABEL_PARENT: "team"}),
            quota("plain"),
            quota("lost", labels={keys.LABEL_PARENT: "missing"}),
        ]
    )
    trees = {name: result.tree for name, result in snapshot.quotas.items()}
    assert trees == {"pool": "42", "team": "42", "sub": "42", "plain": "", "lost": ""}


def test_a_parent_cycle_does_not_hang_the_view() -> None:
    snapshot = live_snapshot(
        [quota("a", labels={keys.LABEL_PARENT: "b"}), quota("b", labels={keys.LABEL_PARENT: "a"})]
    )
    assert {result.tree for result in snapshot.quotas.values()} == {""}


def test_tree_totals_come_from_the_root_runtime_and_the_profile_roots() -> None:
    snapshot = live_snapshot(
        [
            quota(keys.ROOT_QUOTA, annotations={keys.ANNO_RUNTIME: '{"cpu":"64"}'}),
            quota(
                "pool",
                labels={keys.LABEL_TREE_ID: "42", keys.LABEL_IS_ROOT: "true"},
                annotations={keys.ANNO_TOTAL_RESOURCE: '{"cpu":"16","memory":"64Gi"}'},
            ),
        ]
    )
    assert snapshot.totals == {"": {"cpu": 64000}, "42": {"cpu": 16000, "memory": 64 * GIB}}


def test_a_profile_tree_is_titled_by_the_profile_its_root_quota_names() -> None:
    root_labels = {
        keys.LABEL_TREE_ID: "15138299097917482161",
        keys.LABEL_IS_ROOT: "true",
        keys.LABEL_PROFILE: "gpu-pool",
    }
    snapshot = live_snapshot(
        [
            quota(
                "gpu-root",
                labels=root_labels,
                annotations={keys.ANNO_TOTAL_RESOURCE: '{"cpu":"64"}'},
                spec={"max": {"cpu": "4611686018427387"}},
            ),
            quota("short", labels={**root_labels, keys.LABEL_TREE_ID: "42"}),
        ]
    )
    assert dict(snapshot.tree_profiles) == {"15138299097917482161": "gpu-pool", "42": "gpu-pool"}
    lines = render_trees(snapshot)
    assert "tree gpu-pool (id 1513…, total: cpu 64)" in lines
    assert "tree gpu-pool (id 42, total: none)" in lines  # a short id is shown whole
    root_row = next(line for line in lines if line.startswith("  gpu-root"))
    assert root_row.split() == ["gpu-root", "cpu", "-", "-", "-", "-", "-"]


def test_no_objects_give_an_empty_default_tree() -> None:
    snapshot = live_snapshot([])
    assert (dict(snapshot.quotas), dict(snapshot.totals)) == ({}, {"": {}})


def test_every_tree_with_quotas_is_listed_even_without_a_total() -> None:
    """A tree whose root has no ``total-resource`` yet (profile missing) is still drawn."""
    objects = [
        quota("pool", labels={keys.LABEL_TREE_ID: "42"}, spec={"max": {"cpu": "8"}}),
        quota("team", labels={keys.LABEL_PARENT: "pool"}, spec={"max": {"cpu": "4"}}),
    ]
    snapshot = live_snapshot(objects)
    assert "42" in snapshot.totals
    text = "\n".join(render_trees(snapshot))
    assert "tree 42 (total: none)" in text
    assert "  pool" in text and "    team" in text


def test_the_snapshot_renders_as_the_plan_table() -> None:
    objects = [
        quota(keys.ROOT_QUOTA, annotations={keys.ANNO_RUNTIME: '{"cpu":"8"}'}),
        quota("eng", labels={keys.LABEL_IS_PARENT: "true"}, spec={"max": {"cpu": "8"}}),
        quota(
            "ml",
            labels={keys.LABEL_PARENT: "eng"},
            spec={"min": {"cpu": "1"}, "max": {"cpu": "4"}},
            annotations={keys.ANNO_REQUEST: '{"cpu":"3"}', keys.ANNO_RUNTIME: '{"cpu":"2"}'},
            status={"used": {"cpu": "3"}},
        ),
    ]
    lines = render_trees(live_snapshot(objects))
    assert lines[1] == "default tree (total: cpu 8)"
    ml = next(line for line in lines if line.startswith("    ml"))
    assert ml.split() == ["ml", "cpu", "1", "4", "3", "3!", "2"]  # used above runtime is flagged
