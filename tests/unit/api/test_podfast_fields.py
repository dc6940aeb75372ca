"""The fast Pod reader against the validated path, one field at a time: every field of a full
body, missing or given a value of any type, gets the validated path's answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from podfast_checks import Raw, assert_fast, assert_same_both_ways

from elasticquota.core import keys

# -- every field of a full body, one at a time --------------------------------------------------

STAMP = "2026-11-20T08:00:00Z"
FULL: Raw = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "labels": {keys.POD_LABEL_QUOTA: "team", keys.POD_LABEL_PREEMPTIBLE: "false"},
        "annotations": {"note": "x"},
        "creationTimestamp": STAMP,
        "deletionTimestamp": STAMP,
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}},
            }
        ],
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
        ],
        "overhead": {"cpu": "10m"},
        "nodeName": "n",
        "priority": 7,
        "schedulingGates": [{"name": "quota"}],
        "preemptionPolicy": "Never",
    },
    "status": {"phase": "Running", "startTime": STAMP},
}
ODD_VALUES = [None, "", "x", "a\ud800", 1, 1.5, True, [], ["a"], {}, {"a": 1}, {1: "a"}]
FieldPath = tuple[str | int, ...]


def paths(value: Any, prefix: FieldPath = ()) -> list[FieldPath]:
    """Every place in ``value``: dict values and list items, nested."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    found = []
    for key, item in items:
        found.append((*prefix, key))
        if isinstance(item, dict | list):
            found.extend(paths(item, (*prefix, key)))
    return found


def changed(path: FieldPath, value: Any, remove: bool = False) -> Raw:
    raw = copy.deepcopy(FULL)
    parent: Any = raw
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return raw


def test_the_full_body_is_read_fast() -> None:
    assert_fast(FULL)


@pytest.mark.parametrize("path", paths(FULL), ids=lambda path: ".".join(map(str, path)))
def test_any_field_of_any_type_or_missing_gets_the_validated_answer(path: FieldPath) -> None:
    assert_same_both_ways(changed(path, None, remove=True))
    for value in ODD_VALUES:
        assert_same_both_ways(changed(path, value))
