"""ElasticQuotaProfile: tree id, node selection and the root quota the controller writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_factories import BIG, SolveFunction, node, pod, quota, runtimes

from elasticquota.api.parse import parse_node, parse_quota
from elasticquota.core import keys
from elasticquota.core.model.models import (
    LabelRequirement,
    LabelSelector,
    NodeInfo,
    Problem,
    ProfileSpec,
)
from elasticquota.core.quantities.quantity import is_unlimited, parse_units
from elasticquota.core.tree.profiles import (
    fnv1a_64,
    pool_totals,
    profile_tree_id,
    resource_ratio,
    root_owners,
    root_quota_manifest,
    selects,
    tree_profiles,
)

GPU_NODES = [
    node("gpu-1", labels={"pool": "gpu", "zone": "a"}, cpu=4000, memory=8 * 2**30, gpu=8),
    node("gpu-2", labels={"pool": "gpu", "zone": "b"}, cpu=2000, memory=4 * 2**30, gpu=4),
    node("cpu-1", labels={"pool": "cpu", "zone": "a"}, cpu=16000, memory=64 * 2**30),
]


def profile(
    match_labels: dict[str, str] | None = None,
    match_expressions: tuple[LabelRequirement, ...] = (),
    **overrides: Any,
) -> ProfileSpec:
    """The profile of the GPU pool (``pool: gpu``) unless ``match_labels`` says otherwise."""
    labels = {"pool": "gpu"} if match_labels is None else match_labels
    fields: dict[str, Any] = {
        "name": "profile1",
        "namespace": "",
        "quota_name": "gpu-root",
        "node_selector": LabelSelector(labels, match_expressions),
    }
    fields.update(overrides)
    return ProfileSpec(**fields)


# -- tree id --------------------------------------------------------------------------------------


def test_tree_id_is_fnv1a_64_of_namespace_slash_name() -> None:
    """The reference's example: "/profile1" → 2862972692226656278."""
    assert fnv1a_64("/profile1") == 2862972692226656278
    assert profile_tree_id(profile()) == "2862972692226656278"


def test_tree_id_depends_on_namespace() -> None:
    assert profile_tree_id(profile(namespace="ns")) == str(fnv1a_64("ns/profile1"))
    assert profile_tree_id(profile(namespace="ns")) != profile_tree_id(profile())


def test_tree_id_label_wins() -> None:
    assert profile_tree_id(profile(tree_id_label="my-tree")) == "my-tree"


def test_fnv1a_64_of_empty_string_is_the_offset_basis() -> None:
    assert fnv1a_64("") == 14695981039346656037


# -- node selection -------------------------------------------------------------------------------


def names_selected(spec: ProfileSpec, nodes: list[NodeInfo] = GPU_NODES) -> list[str]:
    return [item.name for item in nodes if selects(spec, item)]


def test_match_labels_select_nodes_with_every_label() -> None:
    assert names_selected(profile()) == ["gpu-1", "gpu-2"]
    assert names_selected(profile(match_labels={"pool": "gpu", "zone": "a"})) == ["gpu-1"]
    assert names_selected(profile(match_labels={"missing": "x"})) == []


def test_empty_selector_selects_every_node() -> None:
    assert names_selected(profile(match_labels={})) == ["gpu-1", "gpu-2", "cpu-1"]


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (LabelRequirement("zone", "In", ("a", "c")), ["gpu-1", "cpu-1"]),
        (LabelRequirement("zone", "NotIn", ("a",)), ["gpu-2"]),
        (LabelRequirement("gpu-model", "NotIn", ("a100",)), ["gpu-1", "gpu-2", "cpu-1"]),
        (LabelRequirement("zone", "Exists"), ["gpu-1", "gpu-2", "cpu-1"]),
        (LabelRequirement("gpu-model", "Exists"), []),
        (LabelRequirement("gpu-model", "DoesNotExist"), ["gpu-1", "gpu-2", "cpu-1"]),
        (LabelRequirement("zone", "DoesNotExist"), []),
        (LabelRequirement("zone", "Bogus", ("a",)), []),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_match_expressions(requirement: LabelRequirement, expected: list[str]) -> None:
    spec = profile(match_labels={}, match_expressions=(requirement,))
    assert names_selected(spec) == expected


def test_in_does_not_match_a_missing_label() -> None:
    assert not LabelRequirement("zone", "In", ("a",)).matches({})


def test_match_labels_and_expressions_are_anded() -> None:
    spec = profile(match_expressions=(LabelRequirement("zone", "In", ("b",)),))
    assert names_selected(spec) == ["gpu-2"]


# -- ratio and totals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ratio"),
    [
        ("0.5", 0.5),
        ("1", 1.0),
        ("0.001", 0.001),
        (None, 1.0),
        ("", 1.0),
        ("abc", 1.0),
        ("0", 1.0),
        ("-0.5", 1.0),
        ("1.5", 1.0),
        ("nan", 1.0),
        ("inf", 1.0),
        ("5e-1", 0.5),
        ("0.2_5", 0.25),
        ("0x1p-2", 0.25),
        # Go's strconv.ParseFloat refuses these (the reference then uses 1):
        (" 0.5", 1.0),
        ("0.5\n", 1.0),
        ("0x1", 1.0),
        ("\uff10.5", 1.0),
    ],
)
def test_resource_ratio_in_zero_one_else_one(text: str | None, ratio: float) -> None:
    assert resource_ratio(profile(resource_ratio=text)) == ratio


def test_pool_totals_sum_selected_allocatable_with_every_resource() -> None:
    total, unschedulable = pool_totals(profile(), GPU_NODES)

    assert total == {"cpu": 6000, "memory": 12 * 2**30, "gpu": 12}
    assert unschedulable == {}


def test_ratio_multiplies_and_truncates() -> None:
    """cpu 3001m × 0.5 = 1500.5 → 1500m; 7 gpus × 0.5 = 3.5 → 3."""
    nodes = [node("n", labels={"pool": "gpu"}, cpu=3001, gpu=7)]
    total, _ = pool_totals(profile(resource_ratio="0.5"), nodes)

    assert total == {"cpu": 1500, "gpu": 3}


def test_unschedulable_counts_cordoned_and_not_ready_nodes() -> None:
    nodes = [
        node("ok", labels={"pool": "gpu"}, gpu=1),
        node("cordoned", labels={"pool": "gpu"}, unschedulable=True, gpu=2),
        node("not-ready", labels={"pool": "gpu"}, ready=False, gpu=4),
        node("other-pool", labels={"pool": "cpu"}, unschedulable=True, gpu=8),
    ]
    total, unschedulable = pool_totals(profile(resource_ratio="0.5"), nodes)

    assert total == {"gpu": 3}  # (1 + 2 + 4) × 0.5 = 3.5 → 3: unschedulable nodes still count
    assert unschedulable == {"gpu": 3}


def test_node_without_a_ready_condition_counts_as_unschedulable() -> None:
    raw = {
        "metadata": {"name": "fresh", "labels": {"pool": "gpu"}},
        "status": {"allocatable": {"nvidia.com/gpu": "2"}, "conditions": []},
    }
    info, _ = parse_node(raw)
    assert isinstance(info, NodeInfo)

    _, unschedulable = pool_totals(profile(), [info])

    assert unschedulable == {"nvidia.com/gpu": 2}


def test_parsed_not_ready_node_counts_as_unschedulable() -> None:
    raw = {
        "metadata": {"name": "sick", "labels": {"pool": "gpu"}},
        "status": {
            "allocatable": {"nvidia.com/gpu": "2"},
            "conditions": [{"type": "Ready", "status": "Unknown"}],
        },
    }
    info, _ = parse_node(raw)
    assert isinstance(info, NodeInfo)

    assert pool_totals(profile(), [info]) == ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 2})


# -- the root quota manifest ----------------------------------------------------------------------


def test_root_quota_min_is_the_pool_total_and_max_is_huge() -> None:
    manifest = root_quota_manifest(profile(), GPU_NODES)

    assert manifest["kind"] == "ElasticQuota"
    assert manifest["metadata"]["name"] == "gpu-root"
    assert manifest["spec"]["min"] == {"cpu": "6", "memory": "12Gi"}
    # 4611686018427387 = MaxInt64 / 2000, cpu in cores
    assert manifest["spec"]["max"] == {"cpu": "4611686018427387", "memory": "4611686018427387"}


def test_root_quota_max_is_the_no_limit_ceiling_that_tables_show_as_unset() -> None:
    maximum = root_quota_manifest(profile(), GPU_NODES)["spec"]["max"]

    assert all(is_unlimited(key, parse_units(key, value)) for key, value in maximum.items())
    assert not is_unlimited("cpu", parse_units("cpu", maximum["cpu"]) - 1)
    assert not is_unlimited("memory", parse_units("memory", maximum["memory"]) - 1)


def test_root_quota_resource_keys_choose_min_and_max_keys() -> None:
    """A key absent from the pool gets min 0."""
    manifest = root_quota_manifest(profile(resource_keys=("gpu", "pods")), GPU_NODES)

    assert manifest["spec"]["min"] == {"gpu": "12", "pods": "0"}
    assert manifest["spec"]["max"] == {"gpu": "4611686018427387", "pods": "4611686018427387"}


def test_root_quota_min_is_scaled_by_the_ratio() -> None:
    manifest = root_quota_manifest(profile(resource_ratio="0.5"), GPU_NODES)

    assert manifest["spec"]["min"] == {"cpu": "3", "memory": "6Gi"}


def test_root_quota_labels() -> None:
    spec = profile(quota_labels={keys.LABEL_IS_PARENT: "true", "team": "ml"})
    labels = root_quota_manifest(spec, GPU_NODES)["metadata"]["labels"]

    assert labels == {
        keys.LABEL_PROFILE: "profile1",
        keys.LABEL_TREE_ID: "2862972692226656278",
        keys.LABEL_IS_ROOT: "true",
        keys.LABEL_IS_PARENT: "true",
        "team": "ml",
    }


def test_quota_labels_cannot_override_tree_id_and_is_root() -> None:
    spec = profile(quota_labels={keys.LABEL_TREE_ID: "forged", keys.LABEL_IS_ROOT: "false"})
    labels = root_quota_manifest(spec, GPU_NODES)["metadata"]["labels"]

    assert labels[keys.LABEL_TREE_ID] == "2862972692226656278"
    assert labels[keys.LABEL_IS_ROOT] == "true"


def test_existing_labels_and_annotations_are_kept_min_max_overwritten() -> None:
    existing: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "metadata": {
            "name": "gpu-root",
            "namespace": "",
            "labels": {"owner": "alice", keys.LABEL_PROFILE: "old"},
            "annotations": {"note": "keep me", keys.ANNO_TOTAL_RESOURCE: "{}"},
            "resourceVersion": "42",
        },
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": "1"}},
    }
    manifest = root_quota_manifest(profile(), GPU_NODES, existing)

    assert manifest["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert manifest["metadata"]["labels"]["owner"] == "alice"
    assert manifest["metadata"]["labels"][keys.LABEL_PROFILE] == "profile1"
    assert manifest["metadata"]["annotations"]["note"] == "keep me"
    assert manifest["metadata"]["resourceVersion"] == "42"
    assert manifest["spec"]["min"] == {"cpu": "6", "memory": "12Gi"}
    assert existing["metadata"]["labels"] == {"owner": "alice", keys.LABEL_PROFILE: "old"}


def test_total_and_unschedulable_annotations() -> None:
    nodes = [*GPU_NODES, node("gpu-3", labels={"pool": "gpu"}, unschedulable=True, gpu=2)]
    annotations = root_quota_manifest(profile(), nodes)["metadata"]["annotations"]

    assert json.loads(annotations[keys.ANNO_TOTAL_RESOURCE]) == {
        "cpu": "6",
        "gpu": "14",
        "memory": "12Gi",
    }
    assert annotations[keys.ANNO_UNSCHEDULABLE_RESOURCE] == '{"gpu":"2"}'


def test_root_quota_feeds_a_profile_tree_in_the_engine(solve: SolveFunction) -> None:
    """End to end: the manifest parsed back is the root of a tree whose total is the pool."""
    spec = profile(quota_labels={keys.LABEL_IS_PARENT: "true"}, resource_keys=("cpu", "gpu"))
    root, problems = parse_quota(root_quota_manifest(spec, GPU_NODES))
    assert problems == []
    tree = profile_tree_id(spec)
    team = quota("ml", max={"cpu": BIG, "gpu": BIG}, parent="gpu-root")
    hungry = quota("hungry", max={"cpu": BIG})

    snapshot = solve(
        [root, team, hungry],
        [pod("train", "ml", cpu=BIG, gpu=100), pod("h", "hungry", cpu=BIG)],
        GPU_NODES,
    )

    assert snapshot.totals[tree] == {"cpu": 6000, "memory": 12 * 2**30, "gpu": 12}
    assert snapshot.quotas["ml"].tree == tree
    assert runtimes(snapshot, "gpu", "ml") == {"ml": 12}
    assert runtimes(snapshot, "cpu", "ml", "hungry") == {"ml": 6000, "hungry": 16000}


# -- tree titles ----------------------------------------------------------------------------------


def test_a_profile_tree_is_named_by_the_profile_label_of_its_root_quota() -> None:
    root = root_quota_manifest(profile(), GPU_NODES)

    assert tree_profiles([root]) == {"2862972692226656278": "profile1"}


def test_only_root_quotas_with_a_tree_id_and_a_profile_label_name_a_tree() -> None:
    def quota(**labels: str) -> dict[str, Any]:
        return {"metadata": {"name": "q", "labels": labels}}

    root = {keys.LABEL_IS_ROOT: "true", keys.LABEL_TREE_ID: "7"}
    objects: list[dict[str, Any]] = [
        quota(**{keys.LABEL_TREE_ID: "1", keys.LABEL_PROFILE: "not-root"}),
        quota(**root),  # no profile label: a hand-made tree
        quota(**{keys.LABEL_IS_ROOT: "true", keys.LABEL_PROFILE: "no-tree"}),
        {"metadata": None},
        {"metadata": {"labels": None}},
        {},
    ]
    assert tree_profiles(objects) == {}
    assert tree_profiles([*objects, quota(**root, **{keys.LABEL_PROFILE: "pool"})]) == {"7": "pool"}


def test_of_profiles_naming_one_quota_the_first_by_namespace_and_name_writes_it() -> None:
    late = profile(name="b", namespace="team")
    early = profile(name="a", namespace="team")
    elsewhere = profile(name="c", namespace="other")  # the same quotaName in another namespace
    own = profile(name="d", namespace="team", quota_name="cpu-root")

    owners, ignored = root_owners([late, own, elsewhere, early])

    assert owners == [elsewhere, early, own]
    assert ignored == [
        (late, Problem(late.ref, f"quota 'gpu-root' is already the root of {early.ref}; "
                                 "this profile is ignored")),
    ]  # fmt: skip


def test_a_profile_naming_a_reserved_quota_writes_nothing() -> None:
    reserved = profile(name="a", quota_name=keys.DEFAULT_QUOTA)
    owners, ignored = root_owners([reserved])
    assert owners == []
    assert ignored == [
        (reserved, Problem(reserved.ref, f"quota {keys.DEFAULT_QUOTA!r} is reserved; "
                                         "this profile is ignored")),
    ]  # fmt: skip
