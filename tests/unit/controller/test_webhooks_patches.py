"""The mutating answer's JSON patch made from the handler's merge patch (controller/webhooks/
patches.py) changes an object exactly as Kopf's own (``kopf.Patch.as_json_patch``) does.

Rules: applied to the object, the two patches give the same object, for generated objects and
merge patches (keys that need escaping in a JSON pointer, removals, lists, parents missing or
left empty); where Kopf cannot apply the merge patch (a path through a value that is no object)
neither can ``json_patch``; a patch that changes nothing has no operations; the object given is
not changed.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import kopf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.controller.webhooks.patches import json_patch, pointer_segment

KEYS = st.sampled_from(["a", "b", "c", "x/y", "t~1", "~", ""])
LEAVES = st.one_of(
    st.integers(-3, 3), st.sampled_from(["v", "w", ""]), st.booleans(), st.none(),
    st.lists(st.integers(0, 2), max_size=2),
)  # fmt: skip
OBJECTS = st.recursive(
    LEAVES, lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=12
)
BODIES = st.dictionaries(KEYS, OBJECTS, max_size=4)
PATCH_VALUES = st.recursive(
    st.one_of(LEAVES, st.none()), lambda inner: st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
MERGE_PATCHES = st.dictionaries(KEYS, PATCH_VALUES, max_size=3)


def kopf_applied(body: dict[str, Any], merge: dict[str, Any]) -> dict[str, Any]:
    operations = kopf.Patch(copy.deepcopy(merge), body=kopf.Body(body)).as_json_patch()
    result: dict[str, Any] = jsonpatch.apply_patch(body, operations)
    return result


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES, merge=MERGE_PATCHES)
def test_applied_the_patch_changes_the_object_as_kopfs_does(
    body: dict[str, Any], merge: dict[str, Any]
) -> None:
    before = copy.deepcopy(body)
    try:
        expected = kopf_applied(body, merge)
    except TypeError:
        with pytest.raises(TypeError):
            json_patch(body, merge)
        return
    operations = json_patch(body, merge)
    assert jsonpatch.apply_patch(body, operations) == expected
    assert body == before
    if expected == body:
        assert operations == []


def test_a_label_added_where_the_object_has_none_adds_the_map() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    merge = {"metadata": {"labels": {"a/b": "1"}}, "spec": {"schedulingGates": [{"name": "g"}]}}
    assert json_patch(pod, merge) == [
        {"op": "add", "path": "/metadata/labels", "value": {"a/b": "1"}},
        {"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "g"}]},
    ]


def test_the_last_annotation_removed_removes_the_emptied_map_as_kopf_does() -> None:
    pod = {"metadata": {"name": "p", "annotations": {"who": "me"}}}
    assert json_patch(pod, {"metadata": {"annotations": {"who": None}}}) == [
        {"op": "remove", "path": "/metadata/annotations"}
    ]


def test_a_value_set_again_is_no_operation() -> None:
    pod = {"spec": {"affinity": {"nodeAffinity": {"x": [1]}}}}
    assert json_patch(pod, {"spec": {"affinity": {"nodeAffinity": {"x": [1]}}}}) == []


def test_keys_are_escaped_in_the_pointer() -> None:
    assert pointer_segment("a~b/c") == "a~0b~1c"
    pod = {"metadata": {"labels": {"x": "1"}}}
    assert json_patch(pod, {"metadata": {"labels": {"a~b/c": "2"}}}) == [
        {"op": "add", "path": "/metadata/labels/a~0b~1c", "value": "2"}
    ]
