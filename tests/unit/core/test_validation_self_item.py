"""The admission rules on a quota by itself, one rule at a time: its min and max, its quantities,
and its shared weight, strict-check keys and lending and borrowing limits, each shown refused (the
quota, the rule and the numbers in the message) and accepted at its boundary."""

from __future__ import annotations

import pytest
from rule_objects import Raw, messages, quota, rules, view

from elasticquota.core import keys
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.validation import ANNO_MAX_STRICT_CHECK_KEYS, validate_quota_create

# -- self-item checks -----------------------------------------------------------------------------


def test_negative_max_is_refused_with_the_dimensions_and_values() -> None:
    found = validate_quota_create(quota("q", max={"cpu": "-1", "memory": "1Gi"}), view())
    assert messages(found) == ["q quota.Spec.Max's value < 0, in dimensions :[cpu] (cpu=-1)"]
    assert validate_quota_create(quota("q", max={"cpu": "0"}), view()) == []


def test_negative_min_is_refused() -> None:
    found = validate_quota_create(quota("q", min={"cpu": "-500m"}, max={"cpu": "1"}), view())
    assert messages(found) == ["q quota.Spec.Min's value < 0, in dimensions :[cpu] (cpu=-500m)"]


def test_an_invalid_quantity_is_refused_naming_the_field() -> None:
    found = validate_quota_create(quota("q", max={"cpu": "lots"}), view())
    assert rules(found) == ["quantity"]
    assert found[0].message.startswith("q spec.max.cpu: ")
    assert "'lots' is not a valid Kubernetes quantity" in found[0].message


def test_a_value_that_is_not_a_quantity_is_refused_once_not_again_by_the_rules_comparing_it() -> (
    None
):
    """It counts as 0: min 1Gi was "greater" than a max of '1.5.5Gi', a used 3 above it, a lending
    limit of 1 above a min of 'x'; the quantity rule alone names it."""
    strict = {ANNO_MAX_STRICT_CHECK_KEYS: '["cpu"]', keys.ANNO_LENDING_LIMIT: '{"memory":"1"}'}
    broken = quota(
        "q",
        min={"memory": "x"},
        max={"cpu": "2..", "memory": "1.5.5Gi"},
        used={"cpu": "3"},
        annotations=strict,
    )
    assert rules(validate_quota_create(broken, view())) == ["quantity", "quantity", "quantity"]
    min_only = quota("q", min={"memory": "1Gi"}, max={"memory": "1.5.5Gi"})
    assert messages(validate_quota_create(min_only, view())) == [
        "q spec.max.memory: quantity '1.5.5Gi' is not a valid Kubernetes quantity"
    ]


def test_min_must_not_exceed_max_and_the_message_has_both_numbers() -> None:
    found = validate_quota_create(quota("q", min={"cpu": "5"}, max={"cpu": "4"}), view())
    assert messages(found) == ["resourceKey cpu of quota q min 5 > max 4"]
    assert validate_quota_create(quota("q", min={"cpu": "4"}, max={"cpu": "4"}), view()) == []


def test_min_and_max_are_compared_as_written_not_in_rounded_engine_units() -> None:
    """The reference compares the quantities themselves: memory 1.5 > 1.2 (both are 2 bytes in
    engine units), cpu 0.6m > 0.5m (both 1m); and used 0.5m fits a max of 0.5m."""
    memory = quota("q", min={"memory": "1.5"}, max={"memory": "1.2"})
    assert messages(validate_quota_create(memory, view())) == [
        "resourceKey memory of quota q min 1.5 > max 1.2"
    ]
    cpu = quota("q", min={"cpu": "0.6m"}, max={"cpu": "0.5m"})
    assert rules(validate_quota_create(cpu, view())) == ["min-le-max"]
    strict = {ANNO_MAX_STRICT_CHECK_KEYS: '["cpu"]'}
    fits = quota("q", max={"cpu": "0.5m"}, used={"cpu": "0.5m"}, annotations=strict)
    assert validate_quota_create(fits, view()) == []
    above = quota("q", max={"cpu": "0.5m"}, used={"cpu": "0.6m"}, annotations=strict)
    assert rules(validate_quota_create(above, view())) == ["max-strict-keys"]


def test_min_keys_must_be_within_max_keys() -> None:
    found = validate_quota_create(
        quota("q", min={"cpu": "1", "nvidia.com/gpu": "1"}, max={"cpu": "4"}), view()
    )
    assert messages(found) == [
        "resourceKey nvidia.com/gpu of quota q is included in min, which is not included in max"
    ]


def test_shared_weight_must_parse_and_be_non_negative() -> None:
    negative = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-2"}'})
    assert messages(validate_quota_create(negative, view())) == [
        f"q quota.Annotation[{keys.ANNO_SHARED_WEIGHT}]'s value < 0, in dimension :[cpu] (cpu -2)"
    ]
    broken = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: "{cpu"})
    found = validate_quota_create(broken, view())
    assert rules(found) == ["shared-weight"]
    assert "malformed JSON" in found[0].message
    fine = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"3"}'})
    assert validate_quota_create(fine, view()) == []


def test_a_shared_weight_copied_from_a_refused_max_is_not_blamed_too() -> None:
    """The mutating webhook copies max into a missing shared weight: a max of -1 (or one that is
    not a quantity) is refused by the max's rule alone, not by shared-weight as well."""
    mutated = quota("q", max={"cpu": "-1", "memory": "1Gi"})
    mutated["metadata"]["annotations"] = quota_defaults(mutated, view()).annotations
    assert mutated["metadata"]["annotations"] == {
        keys.ANNO_SHARED_WEIGHT: '{"cpu":"-1","memory":"1Gi"}'
    }
    found = validate_quota_create(mutated, view())
    assert rules(found) == ["negative-max"]
    assert messages(found) == ["q quota.Spec.Max's value < 0, in dimensions :[cpu] (cpu=-1)"]
    lots = quota("q", max={"cpu": "lots"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"lots"}'})
    assert rules(validate_quota_create(lots, view())) == ["quantity"]


def test_a_shared_weight_of_its_own_is_still_checked_beside_a_refused_max() -> None:
    own = quota("q", max={"cpu": "-1"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-2"}'})
    assert rules(validate_quota_create(own, view())) == ["negative-max", "shared-weight"]


def test_max_strict_check_keys_keep_max_at_or_above_used() -> None:
    strict = {ANNO_MAX_STRICT_CHECK_KEYS: '["cpu","memory"]'}
    below = quota("q", max={"cpu": "2", "memory": "1Gi"}, annotations=strict, used={"cpu": "3"})
    assert messages(validate_quota_create(below, view())) == [
        "resourceKey cpu of quota q max 2 < used 3"
    ]
    missing = quota("q", max={"memory": "1Gi"}, annotations=strict, used={"cpu": "1"})
    assert messages(validate_quota_create(missing, view())) == [
        "resourceKey cpu of quota q is included in used, which is not included in max but should "
        "check max >= used"
    ]
    # keys never used are skipped; max == used is fine
    fine = quota("q", max={"cpu": "3"}, annotations=strict, used={"cpu": "3"})
    assert validate_quota_create(fine, view()) == []


def test_lending_limit_is_a_non_negative_resource_list_at_most_min() -> None:
    def with_limit(text: str) -> Raw:
        return quota(
            "q", min={"cpu": "4"}, max={"cpu": "8"}, annotations={keys.ANNO_LENDING_LIMIT: text}
        )

    assert messages(validate_quota_create(with_limit('{"cpu":"5"}'), view())) == [
        "q lending limit cpu 5 > min 4: a quota can lend at most its min"
    ]
    assert messages(validate_quota_create(with_limit('{"cpu":"-1"}'), view())) == [
        f"q annotation {keys.ANNO_LENDING_LIMIT} has negative values: cpu -1"
    ]
    found = validate_quota_create(with_limit("[1]"), view())
    assert rules(found) == ["lending-limit"]
    assert f"q annotation {keys.ANNO_LENDING_LIMIT} is invalid" in found[0].message
    assert validate_quota_create(with_limit('{"cpu":"4"}'), view()) == []
    assert validate_quota_create(with_limit('{"cpu":"500m"}'), view()) == []


def test_limits_and_weights_write_amounts_of_bytes_with_their_suffix() -> None:
    """Not ephemeral-storage's canonical form, a count of bytes (2147483648 for 2Gi)."""
    lending = quota(
        "q",
        min={"ephemeral-storage": "1Gi"},
        max={"ephemeral-storage": "10Gi"},
        annotations={keys.ANNO_LENDING_LIMIT: '{"ephemeral-storage":"2Gi"}'},
    )
    assert messages(validate_quota_create(lending, view())) == [
        "q lending limit ephemeral-storage 2Gi > min 1Gi: a quota can lend at most its min"
    ]
    borrowing = quota("q", annotations={keys.ANNO_BORROWING_LIMIT: '{"ephemeral-storage":"-1G"}'})
    assert messages(validate_quota_create(borrowing, view())) == [
        f"q annotation {keys.ANNO_BORROWING_LIMIT} has negative values: ephemeral-storage -1G"
    ]
    weight = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: '{"ephemeral-storage":"-1Gi"}'})
    assert messages(validate_quota_create(weight, view())) == [
        f"q quota.Annotation[{keys.ANNO_SHARED_WEIGHT}]'s value < 0, in dimension "
        ":[ephemeral-storage] (ephemeral-storage -1Gi)"
    ]


@pytest.mark.parametrize("rule", ["revocation-min-runtime", "preemption-min-runtime"])
def test_a_minimum_runtime_is_seconds_or_a_duration_of_at_most_a_week(rule: str) -> None:
    """Each annotation is checked by the rule of its name."""
    annotation = f"{keys.EXT_PREFIX}/{rule}"

    def with_min_runtime(text: str) -> Raw:
        return quota("q", min={"cpu": "4"}, max={"cpu": "8"},
                     annotations={annotation: text})  # fmt: skip

    for good in ("600", "10m", "1h30m", "0"):
        assert validate_quota_create(with_min_runtime(good), view()) == []
    found = validate_quota_create(with_min_runtime("ten minutes"), view())
    assert rules(found) == [rule]
    assert messages(found) == [
        f"q annotation {annotation} is invalid: 'ten minutes': expected "
        "seconds (600) or a duration of hours, minutes and seconds (10m, 1h30m)"
    ]
    assert messages(validate_quota_create(with_min_runtime("8d"), view()))[0].endswith(
        "'8d': expected seconds (600) or a duration of hours, minutes and seconds (10m, 1h30m)"
    )
    assert messages(validate_quota_create(with_min_runtime("200h"), view())) == [
        f"q annotation {annotation} is invalid: '200h': allowed from 0 to 604800 seconds"
    ]


def test_borrowing_limit_is_a_non_negative_resource_list() -> None:
    def with_limit(text: str) -> Raw:
        return quota("q", annotations={keys.ANNO_BORROWING_LIMIT: text})

    assert messages(validate_quota_create(with_limit('{"cpu":"-2"}'), view())) == [
        f"q annotation {keys.ANNO_BORROWING_LIMIT} has negative values: cpu -2"
    ]
    assert rules(validate_quota_create(with_limit("nope"), view())) == ["borrowing-limit"]
    assert validate_quota_create(with_limit('{"cpu":"100"}'), view()) == []


def test_every_independent_violation_is_reported() -> None:
    found = validate_quota_create(
        quota("q", min={"cpu": "5", "memory": "-1"}, max={"cpu": "4", "memory": "1Gi"}), view()
    )
    assert rules(found) == ["negative-min", "min-le-max"]
