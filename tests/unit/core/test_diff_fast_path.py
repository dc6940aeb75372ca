"""core.decisions.diff.quota_write decides exactly as comparing parsed values did, only faster.

Rules: a current value that is exactly the text the operator would write is the same without being
parsed, but only where that text reads back exactly (within MaxInt64; beyond, the parse caps and
the value differs, as before); any other text is parsed and compared without zeros, as before.
The reference below is the diff as it was written before the fast path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine_factories import quota_result
from hypothesis import given, settings
from hypothesis import strategies as st

from elasticquota.core import keys
from elasticquota.core.decisions.diff import WRITTEN_ANNOTATIONS, QuotaWrite, quota_write
from elasticquota.core.quantities import resources
from elasticquota.core.quantities.quantity import QuantityError, format_units, parse_units
from elasticquota.core.solve.results import QuotaResult

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
MAX_INT64 = 2**63 - 1
VALUES = st.one_of(
    st.integers(0, 5_000),
    st.integers(0, 2**62),
    st.integers(MAX_INT64 - 3, MAX_INT64 + 3),
    st.integers(MAX_INT64 * 1000 - 3, MAX_INT64 * 1000 + 3),
    st.sampled_from([1024, 2**30, 10**18, 10**21]),
)
LISTS = st.dictionaries(st.sampled_from(RESOURCES), VALUES, max_size=3)


def reference(
    result: QuotaResult, annotations: Mapping[str, str], status: Mapping[str, Any] | None
) -> QuotaWrite:
    """``quota_write`` before the fast path: every current value parsed."""

    def same(current: resources.ResourceList | None, desired: Mapping[str, int]) -> bool:
        return current is not None and resources.drop_zeros(current) == resources.drop_zeros(
            desired
        )

    def current_annotation(key: str) -> resources.ResourceList | None:
        text = annotations.get(key)
        try:
            return None if text is None else resources.parse_resource_list_json(text)
        except QuantityError:
            return None

    changes = {}
    for key, field in WRITTEN_ANNOTATIONS.items():
        if key == keys.ANNO_RUNTIME and result.name in (keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA):
            continue
        desired = getattr(result, field)
        if not same(current_annotation(key), desired):
            changes[key] = resources.to_annotation(desired)
    used_now = (status or {}).get("used")
    try:
        parsed = resources.parse_resource_list(used_now) if isinstance(used_now, Mapping) else None
    except QuantityError:
        parsed = None
    used = None
    if not same(parsed, result.used):
        stale = (
            [k for k in used_now if k not in result.used] if isinstance(used_now, Mapping) else []
        )
        used = {**dict.fromkeys(stale), **resources.format_resource_list(result.used)}
    return QuotaWrite(result.namespace, result.name, changes, used)


def a_result(name: str, figures: Mapping[str, resources.ResourceList]) -> QuotaResult:
    return quota_result(name, namespace="team", **figures)


@st.composite
def current_text(draw: st.DrawFn, desired: resources.ResourceList) -> str | None:
    """What an object may hold: nothing, our text, another spelling, other values, garbage."""
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return None
    if choice == 1:
        return resources.to_annotation(desired)
    if choice == 2:  # the same values, spelled differently (no suffixes), zeros added
        spelled = {
            k: str(parse_units(k, format_units(k, v))) + ("m" if k == "cpu" else "")
            for k, v in desired.items()
        }
        return resources.to_annotation({}) if not spelled else str(spelled).replace("'", '"')
    if choice == 3:
        return resources.to_annotation(draw(LISTS))
    if choice == 4:
        return resources.to_annotation({**desired, "memory": 0})
    return '{"cpu": "lots"}'


FIELDS = ("runtime", "request", "child_request", "used", "non_preemptible_request")


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(["a", keys.SYSTEM_QUOTA]),
    figures=st.fixed_dictionaries({field: LISTS for field in (*FIELDS, "non_preemptible_used")}),
    data=st.data(),
)
def test_the_fast_path_decides_exactly_as_parsing_every_value(
    name: str, figures: dict[str, resources.ResourceList], data: st.DataObject
) -> None:
    result = a_result(name, figures)
    annotations = {}
    for key, field in WRITTEN_ANNOTATIONS.items():
        text = data.draw(current_text(getattr(result, field)))
        if text is not None:
            annotations[key] = text
    used_choice = data.draw(st.integers(0, 3))
    status: dict[str, Any] | None = (
        None
        if used_choice == 0
        else {"used": resources.format_resource_list(result.used)}
        if used_choice == 1
        else {"used": resources.format_resource_list(data.draw(LISTS))}
        if used_choice == 2
        else {"used": {"cpu": "nope"}}
    )
    assert quota_write(result, annotations, status) == reference(result, annotations, status)
    # twice: the texts remembered by the first call change nothing either
    assert quota_write(result, annotations, status) == reference(result, annotations, status)


def test_a_value_beyond_max_int64_is_rewritten_as_before() -> None:
    """Its text reads back capped: it never equals the result (the reference's behaviour)."""
    huge = {"memory": MAX_INT64 + 1}
    figures = {field: huge for field in (*FIELDS, "non_preemptible_used")}
    result = a_result("a", figures)
    annotations = {key: resources.to_annotation(huge) for key in WRITTEN_ANNOTATIONS}
    status = {"used": resources.format_resource_list(huge)}
    change = quota_write(result, annotations, status)
    assert change == reference(result, annotations, status)
    assert set(change.annotations) == set(WRITTEN_ANNOTATIONS) and change.used is not None
