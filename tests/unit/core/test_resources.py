"""Resource lists: parsing into engine units, the annotation JSON format and the arithmetic."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elasticquota.core.quantities.quantity import QuantityError
from elasticquota.core.quantities.resources import (
    SharedLists,
    add,
    drop_zeros,
    exceeding,
    format_resource_list,
    mask,
    parse_resource_list,
    parse_resource_list_json,
    scale,
    subtract_clamped,
    to_annotation,
)

GIB = 1024**3


def test_parse_accepts_strings_and_numbers_into_engine_units() -> None:
    raw = {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": 110.0}
    assert parse_resource_list(raw) == {
        "cpu": 500,
        "memory": GIB,
        "nvidia.com/gpu": 2,
        "pods": 110,
    }


def test_parse_of_nothing_is_an_empty_list() -> None:
    assert parse_resource_list(None) == {}
    assert parse_resource_list({}) == {}


def test_a_bad_quantity_error_names_the_resource_and_the_value() -> None:
    with pytest.raises(QuantityError) as raised:
        parse_resource_list({"cpu": "1", "memory": "lots"})
    assert str(raised.value).startswith("memory: ")
    assert "'lots'" in str(raised.value)


def test_annotation_format_is_compact_json_sorted_keys_quantities_as_strings() -> None:
    assert to_annotation({"memory": 80 * GIB, "cpu": 53_000}) == '{"cpu":"53","memory":"80Gi"}'


def test_annotation_of_an_empty_list_is_an_empty_object() -> None:
    assert to_annotation({}) == "{}"


def test_annotation_reader_accepts_numbers_as_the_reference_tests_write_them() -> None:
    assert parse_resource_list_json('{"cpu":2,"memory":50}') == {"cpu": 2000, "memory": 50}


def test_annotation_reader_accepts_the_written_format() -> None:
    assert parse_resource_list_json('{"cpu":"53","memory":"80Gi"}') == {
        "cpu": 53_000,
        "memory": 80 * GIB,
    }


@pytest.mark.parametrize("text", ['{"cpu":', "cpu: 1", "", "{'cpu': 1}"])
def test_annotation_reader_reports_malformed_json(text: str) -> None:
    with pytest.raises(QuantityError, match="malformed JSON"):
        parse_resource_list_json(text)


@pytest.mark.parametrize("text", ["[1, 2]", '"cpu"', "3", "null"])
def test_annotation_reader_requires_a_json_object(text: str) -> None:
    with pytest.raises(QuantityError, match="expected a JSON object"):
        parse_resource_list_json(text)


def test_annotation_reader_reports_a_bad_quantity_by_resource() -> None:
    with pytest.raises(QuantityError, match=r"^cpu: .*'many'"):
        parse_resource_list_json('{"cpu":"many"}')


resource_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods", "ephemeral-storage"]),
    st.integers(min_value=0, max_value=2**62),
)


@given(resource_lists)
def test_annotation_round_trips(resources: dict[str, int]) -> None:
    text = to_annotation(resources)
    assert all(isinstance(value, str) for value in json.loads(text).values())
    assert parse_resource_list_json(text) == resources


def test_format_resource_list_sorts_keys_and_formats_each_by_its_resource() -> None:
    formatted = format_resource_list({"pods": 110, "cpu": 1500, "memory": 2048})
    assert list(formatted) == ["cpu", "memory", "pods"]
    assert formatted == {"cpu": "1500m", "memory": "2Ki", "pods": "110"}


def test_add_sums_over_the_union_of_keys() -> None:
    assert add({"cpu": 1, "memory": 2}, {"cpu": 10, "pods": 3}) == {
        "cpu": 11,
        "memory": 2,
        "pods": 3,
    }


def test_subtract_clamps_negative_results_to_zero_over_the_union_of_keys() -> None:
    assert subtract_clamped({"cpu": 5, "memory": 1}, {"cpu": 2, "memory": 4, "pods": 1}) == {
        "cpu": 3,
        "memory": 0,
        "pods": 0,
    }


def test_mask_keeps_only_the_given_keys_and_never_invents_one() -> None:
    assert mask({"cpu": 1, "memory": 2}, ["memory", "nvidia.com/gpu"]) == {"memory": 2}


def test_scale_multiplies_every_entry() -> None:
    assert scale({"cpu": 3, "memory": -1}, -1) == {"cpu": -3, "memory": 1}


def test_exceeding_compares_only_keys_present_in_both_lists() -> None:
    amount = {"cpu": 5, "memory": 9, "pods": 100}
    limit = {"cpu": 4, "memory": 9, "nvidia.com/gpu": 0}
    assert exceeding(amount, limit) == ["cpu"]


def test_exceeding_lists_names_sorted() -> None:
    assert exceeding({"memory": 2, "cpu": 2}, {"memory": 1, "cpu": 1}) == ["cpu", "memory"]


def test_drop_zeros_is_the_zero_insensitive_view() -> None:
    assert drop_zeros({"cpu": 0, "memory": 3}) == {"memory": 3}


def test_shared_lists_give_one_dict_for_equal_items_in_the_same_order() -> None:
    shared = SharedLists(limit=2)
    first = shared.share({"cpu": 1, "memory": 2})
    assert shared.share({"cpu": 1, "memory": 2}) is first
    assert shared.share({"memory": 2, "cpu": 1}) is not first  # another order: another list
    assert shared.share({"cpu": 2}) == {"cpu": 2}  # past the limit the memo starts again...
    again = shared.share({"cpu": 1, "memory": 2})
    assert again == first and again is not first  # ...and the lists given out stay as they were
