"""The quota webhook's matchConditions, evaluated by a CEL interpreter (cel-python) on the objects
``quota_unchanged`` is given.

Rules (controller/webhooks/conditions.py): the API server skips the webhook exactly where
``quota_unchanged`` lets an UPDATE through at once (the operator's writes of its figures among
them), so what is allowed and refused stays the same; CREATE and DELETE always reach it; the
expression evaluates to a boolean on every object that passed the CRD's schema (an error would
refuse the request under the quota webhook's failure policy); the webhook server answers at once
the same updates where API servers without matchConditions send them (``unchanged_update``).

cel-python compares values of different types with an error, as CEL did before 2022; the CEL of
the API servers with matchConditions (cel-go) finds them unequal (heterogeneous equality), which
``heterogeneous_equal`` gives the interpreter here.
"""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest
from celpy import celtypes
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from elasticquota.controller.webhooks.conditions import (
    UNCHANGED_UPDATE,
    quota_match_conditions,
    unchanged_update,
    unchanged_update_expression,
)
from elasticquota.core import keys
from elasticquota.core.validation import WATCHED_ANNOTATIONS, WATCHED_LABELS, quota_unchanged


def heterogeneous_equal(a: Any, b: Any) -> celtypes.BoolType:
    """CEL's ``==`` as cel-go has it: values of different types are unequal, maps and lists
    equal where their entries are."""
    if isinstance(a, celtypes.MapType) and isinstance(b, celtypes.MapType):
        return celtypes.BoolType(
            a.keys() == b.keys() and all(heterogeneous_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, celtypes.ListType) and isinstance(b, celtypes.ListType):
        pairs = zip(a, b, strict=False)
        return celtypes.BoolType(
            len(a) == len(b) and all(heterogeneous_equal(x, y) for x, y in pairs)
        )
    return celtypes.BoolType(type(a) is type(b) and a == b)


def heterogeneous_unequal(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(not heterogeneous_equal(a, b))


ENVIRONMENT = celpy.Environment()
PROGRAM = ENVIRONMENT.program(
    ENVIRONMENT.compile(unchanged_update_expression()),
    functions={"_==_": heterogeneous_equal, "_!=_": heterogeneous_unequal},
)

#: Keys the rules read and keys they do not (the operator's figures among the annotations).
LABELS = [*WATCHED_LABELS, "team", keys.LABEL_ALLOW_LENT]
ANNOTATIONS = [*WATCHED_ANNOTATIONS, "note", keys.ANNO_RUNTIME, keys.ANNO_REQUEST]


def calls_webhook(operation: str, new: Any, old: Any) -> bool:
    """What the condition says for a review of ``operation`` (True: the webhook is called)."""
    activation = {
        "request": celpy.json_to_cel({"operation": operation}),
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
    }
    result = PROGRAM.evaluate(activation)
    assert isinstance(result, celtypes.BoolType), f"not a boolean: {result!r}"
    return bool(result)


def quota(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: Any = None,
) -> dict[str, Any]:
    """A quota as the API server holds it, with only the maps given (None: absent)."""
    given = {"labels": labels, "annotations": annotations}
    metadata = {"name": "q", "namespace": "team"} | {
        k: v for k, v in given.items() if v is not None
    }
    body = {"metadata": metadata, "status": {"used": {"cpu": "1"}}}
    return body | ({} if spec is None else {"spec": spec})


#: What the CRD's schema and the API server's metadata let through: strings in metadata, min and
#: max ResourceLists of integers or strings (``1`` and ``"1"`` both), an optional spec.
values = st.sampled_from(["", "a", "b", "true", '{"cpu":"1"}'])
quantities = st.dictionaries(st.sampled_from(["cpu", "memory"]), st.sampled_from(["1", 1, "2"]))
specs = st.none() | st.fixed_dictionaries({}, optional={"min": quantities, "max": quantities})
#: The interpreter takes 10-30 ms per evaluation.
CEL = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
quotas = st.builds(
    quota,
    st.none() | st.dictionaries(st.sampled_from(LABELS), values, max_size=4),
    st.none() | st.dictionaries(st.sampled_from(ANNOTATIONS), values, max_size=4),
    specs,
)


#: An edit of a quota: where (a metadata map, or a ResourceList of the spec), which key, and its
#: new value (None: removed).
edits = st.lists(
    st.one_of(
        st.tuples(st.just("labels"), st.sampled_from(LABELS), st.none() | values),
        st.tuples(st.just("annotations"), st.sampled_from(ANNOTATIONS), st.none() | values),
        st.tuples(
            st.sampled_from(["min", "max"]),
            st.sampled_from(["cpu", "memory"]),
            st.none() | st.sampled_from(["1", 1, "2"]),
        ),
    ),
    max_size=3,
)


def edited(old: dict[str, Any], changes: list[tuple[str, str, Any]]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    for place, key, value in changes:
        if place in ("labels", "annotations"):
            entries = new["metadata"].setdefault(place, {})
        else:
            entries = new.setdefault("spec", {}).setdefault(place, {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value
    return new


@CEL
@given(old=quotas, changes=edits)
@example(old=quota(spec={"min": {"cpu": 1}}), changes=[("min", "cpu", "1")])
@example(old=quota(), changes=[("annotations", keys.ANNO_RUNTIME, "a")])
def test_an_update_skips_the_webhook_exactly_where_the_rules_let_it_through_at_once(
    old: dict[str, Any], changes: list[tuple[str, str, Any]]
) -> None:
    new = edited(old, changes)
    assert calls_webhook("UPDATE", new, old) == (not quota_unchanged(old, new))
    assert calls_webhook("UPDATE", old, new) == (not quota_unchanged(new, old))
    # The webhook server's twin, for API servers without matchConditions.
    review = {"request": {"operation": "UPDATE", "object": new, "oldObject": old}}
    assert unchanged_update(review) == (not calls_webhook("UPDATE", new, old))


@pytest.mark.parametrize(
    ("place", "key"),
    [
        *(("labels", key) for key in LABELS),
        *(("annotations", key) for key in ANNOTATIONS),
        ("min", "cpu"),
        ("max", "memory"),
    ],
)
def test_each_key_reaches_the_webhook_when_changed_exactly_when_the_rules_read_it(
    place: str, key: str
) -> None:
    every = {"cpu": "1", "memory": "1"}
    old = quota(
        dict.fromkeys(LABELS, "v"), dict.fromkeys(ANNOTATIONS, "v"), {"min": every, "max": every}
    )
    for value in ("changed", None):
        new = edited(old, [(place, key, value)])
        assert calls_webhook("UPDATE", new, old) == (not quota_unchanged(old, new))
        assert calls_webhook("UPDATE", new, old) == (
            key in (*WATCHED_LABELS, *WATCHED_ANNOTATIONS) or place in ("min", "max")
        )


@settings(CEL, max_examples=50)
@given(old=quotas, figures=st.dictionaries(st.sampled_from(ANNOTATIONS[-3:]), values))
def test_the_operators_writes_of_its_figures_skip_the_webhook(
    old: dict[str, Any], figures: dict[str, str]
) -> None:
    new = quota(
        old["metadata"].get("labels"),
        {**old["metadata"].get("annotations", {}), **figures},
        old.get("spec"),
    )
    new["status"] = {"used": {"cpu": "7"}}
    assert not calls_webhook("UPDATE", new, old)


@pytest.mark.parametrize("operation", ["CREATE", "DELETE", "CONNECT"])
def test_other_operations_always_reach_the_webhook(operation: str) -> None:
    same = quota({"team": "a"}, {}, {"min": {}})
    new, old = {"CREATE": (same, None), "DELETE": (None, same)}.get(operation, (same, same))
    assert calls_webhook(operation, new, old)


def test_the_condition_is_named_and_has_the_expression() -> None:
    assert quota_match_conditions() == [
        {"name": UNCHANGED_UPDATE, "expression": unchanged_update_expression()}
    ]
