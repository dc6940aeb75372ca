"""core.decisions.diff.quota_write: which annotations and ``status.used`` a quota object needs.

Rules: the five written annotations hold JSON ResourceLists with quantities as strings; a value is
rewritten only when it differs from the object's after removing zero entries (an unchanged quota is
never written, a restart writes nothing); unreadable current values are rewritten; the system and
default quotas get no ``runtime``; annotations the operator does not own are never touched; and a
write, applied by the API server as a JSON merge patch, leaves nothing more to write.
"""

from __future__ import annotations

from typing import Any

import pytest
from diff_objects import FIELDS, GIB, apply, result, written
from hypothesis import given, settings
from hypothesis import strategies as st

from elasticquota.core import keys
from elasticquota.core.decisions.diff import WRITTEN_ANNOTATIONS, quota_write
from elasticquota.core.quantities.resources import ResourceList, format_resource_list, to_annotation

# -- nothing to write -----------------------------------------------------------------------------


def test_an_object_that_matches_its_result_needs_no_write() -> None:
    res = result()
    annotations, status = written(res)
    change = quota_write(res, annotations, status)
    assert change.empty
    assert (change.annotations, change.used) == ({}, None)


def test_zero_entries_are_ignored_on_both_sides() -> None:
    res = result(request={"cpu": 1000, "memory": 0}, used={"cpu": 2000})
    annotations, _ = written(res)
    annotations[keys.ANNO_REQUEST] = '{"cpu":"1","nvidia.com/gpu":"0"}'  # no memory, extra zero
    status = {"used": {"cpu": "2", "memory": "0"}}
    assert quota_write(res, annotations, status).empty


def test_the_same_quantity_in_another_notation_needs_no_write() -> None:
    res = result()
    annotations, _ = written(res)
    annotations[keys.ANNO_RUNTIME] = '{"cpu":"1000m","memory":"1024Mi"}'
    annotations[keys.ANNO_REQUEST] = '{"cpu":1,"memory":1073741824}'  # numbers are quantities too
    assert quota_write(res, annotations, {"used": {"cpu": "2000m"}}).empty


def test_annotations_the_operator_does_not_own_are_never_written() -> None:
    res = result()
    annotations, status = written(res)
    annotations[keys.ANNO_SHARED_WEIGHT] = '{"cpu":"5"}'
    annotations["example.com/owner"] = "team-a"
    annotations[keys.ANNO_REQUEST] = '{"cpu":"9"}'
    change = quota_write(res, annotations, status)
    assert set(change.annotations) == {keys.ANNO_REQUEST}


# -- what is written ------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "field"), sorted(WRITTEN_ANNOTATIONS.items()))
def test_each_written_annotation_is_rewritten_alone_when_it_differs(key: str, field: str) -> None:
    before = result()
    annotations, status = written(before)
    after = result(**{field: {"cpu": 3000, "memory": GIB}})
    change = quota_write(after, annotations, status)
    assert change.annotations == {key: '{"cpu":"3","memory":"1Gi"}'}
    assert change.used is None


def test_annotations_are_compact_sorted_json_with_quantities_as_strings() -> None:
    res = result(request={"memory": 3 * GIB // 2, "cpu": 1500, "nvidia.com/gpu": 2})
    change = quota_write(res, {}, None)
    assert change.annotations[keys.ANNO_REQUEST] == (
        '{"cpu":"1500m","memory":"1536Mi","nvidia.com/gpu":"2"}'
    )


def test_missing_annotations_are_written_even_when_all_zero() -> None:
    zero = {"cpu": 0, "memory": 0}
    res = result(**dict.fromkeys(FIELDS, zero))
    change = quota_write(res, {}, {"used": {"cpu": "2"}})
    assert change.annotations == dict.fromkeys(WRITTEN_ANNOTATIONS, '{"cpu":"0","memory":"0"}')


@pytest.mark.parametrize(
    "unreadable",
    ['{"cpu": ', '["cpu"]', '{"cpu":"lots"}', '"1"'],
    ids=["truncated", "a-list", "bad-quantity", "a-string"],
)
def test_an_unreadable_annotation_is_rewritten(unreadable: str) -> None:
    res = result()
    annotations, status = written(res)
    annotations[keys.ANNO_CHILD_REQUEST] = unreadable
    change = quota_write(res, annotations, status)
    assert change.annotations == {keys.ANNO_CHILD_REQUEST: to_annotation(res.child_request)}


@pytest.mark.parametrize("name", [keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA])
def test_system_and_default_quotas_get_no_runtime(name: str) -> None:
    change = quota_write(result(name, keys.DEFAULT_RESERVED_NAMESPACE), {}, None)
    assert keys.ANNO_RUNTIME not in change.annotations
    assert set(change.annotations) == set(WRITTEN_ANNOTATIONS) - {keys.ANNO_RUNTIME}


def test_a_stale_runtime_on_a_system_quota_is_left_alone() -> None:
    res = result(keys.SYSTEM_QUOTA, keys.DEFAULT_RESERVED_NAMESPACE)
    annotations, status = written(res)
    annotations[keys.ANNO_RUNTIME] = '{"cpu":"1"}'
    assert quota_write(res, annotations, status).empty


def test_the_root_quota_gets_its_runtime() -> None:
    """The virtual root's runtime is the tree's distributable total."""
    change = quota_write(result(keys.ROOT_QUOTA, keys.DEFAULT_RESERVED_NAMESPACE), {}, None)
    assert keys.ANNO_RUNTIME in change.annotations


def test_used_goes_to_the_status_when_it_differs() -> None:
    res = result(used={"cpu": 2500, "memory": GIB})
    annotations, _ = written(res)
    change = quota_write(res, annotations, {"used": {"cpu": "2", "memory": "1Gi"}})
    assert change.annotations == {}
    assert change.used == {"cpu": "2500m", "memory": "1Gi"}


@pytest.mark.parametrize(
    "status",
    [None, {}, {"used": None}, {"used": "2"}, {"used": {"cpu": "two"}}],
    ids=["no-status", "empty", "null-used", "not-a-map", "bad-quantity"],
)
def test_a_missing_or_unreadable_status_used_is_written(status: dict[str, Any] | None) -> None:
    res = result()
    annotations, _ = written(res)
    change = quota_write(res, annotations, status)
    assert change.used == {"cpu": "2", "memory": "0"}


def test_the_write_names_its_quota() -> None:
    change = quota_write(result("b", "other"), {}, None)
    assert (change.namespace, change.name) == ("other", "b")


# -- a write converges ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "status"),
    [
        ({}, None),
        ({keys.ANNO_REQUEST: "garbage"}, {"used": "garbage"}),
        ({keys.ANNO_REQUEST: '{"cpu":"7","nvidia.com/gpu":"1"}'}, {"used": {"cpu": "7"}}),
        # A resource the quota no longer tracks (e.g. removed from its max while a pod used it):
        # merge patches merge maps, so the stale key must be deleted explicitly.
        ({}, {"used": {"cpu": "2", "nvidia.com/gpu": "1"}}),
        ({}, {"used": {"pods": "3"}, "other": "kept"}),
    ],
    ids=["new-object", "unreadable", "stale-annotation", "stale-used-key", "only-stale-used"],
)
def test_a_write_applied_as_a_merge_patch_leaves_nothing_to_write(
    annotations: dict[str, str], status: dict[str, Any] | None
) -> None:
    res = result()
    change = quota_write(res, annotations, status)
    new_annotations, new_status = apply(change, annotations, status)
    assert quota_write(res, new_annotations, new_status).empty


def test_a_stale_used_key_is_deleted_by_the_write() -> None:
    res = result(used={"cpu": 2000})
    change = quota_write(res, {}, {"used": {"cpu": "2", "nvidia.com/gpu": "1"}})
    _, status = apply(change, {}, {"used": {"cpu": "2", "nvidia.com/gpu": "1"}})
    assert status["used"] == {"cpu": "2"}


resource_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), st.integers(0, 10**7), max_size=4
)
current_values = st.one_of(
    st.none(),
    st.just("not json"),
    resource_lists.map(to_annotation),
)


@settings(max_examples=150, deadline=None)
@given(
    desired=st.fixed_dictionaries({field: resource_lists for field in (*FIELDS, "used")}),
    current=st.fixed_dictionaries({key: current_values for key in WRITTEN_ANNOTATIONS}),
    current_used=st.one_of(st.none(), resource_lists.map(format_resource_list)),
    name=st.sampled_from(["a", keys.ROOT_QUOTA, keys.SYSTEM_QUOTA]),
)
def test_any_write_converges_in_one_step(
    desired: dict[str, ResourceList],
    current: dict[str, str | None],
    current_used: dict[str, str] | None,
    name: str,
) -> None:
    res = result(name, **desired)
    annotations = {key: value for key, value in current.items() if value is not None}
    status = None if current_used is None else {"used": current_used}
    change = quota_write(res, annotations, status)
    new_annotations, new_status = apply(change, annotations, status)
    assert quota_write(res, new_annotations, new_status).empty
