"""Kubernetes quantities: exact parsing, engine units (cpu millicores, others whole units, rounded
up), the canonical formatting Kubernetes writes and the quantities messages quote."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elasticquota.core.quantities.quantity import (
    QuantityError,
    format_quantity,
    format_units,
    parse_quantity,
    parse_units,
    to_units,
)

MAX_INT64 = 2**63 - 1
GPU = "nvidia.com/gpu"


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", Fraction(0)),
        ("1", Fraction(1)),
        ("250", Fraction(250)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("500m", Fraction(1, 2)),
        ("2k", Fraction(2000)),
        ("3M", Fraction(3 * 10**6)),
        ("4G", Fraction(4 * 10**9)),
        ("5T", Fraction(5 * 10**12)),
        ("6P", Fraction(6 * 10**15)),
        ("7E", Fraction(7 * 10**18)),
        ("1Ki", Fraction(1024)),
        ("2Mi", Fraction(2 * 1024**2)),
        ("3Gi", Fraction(3 * 1024**3)),
        ("4Ti", Fraction(4 * 1024**4)),
        ("5Pi", Fraction(5 * 1024**5)),
        ("6Ei", Fraction(6 * 1024**6)),
        ("1.5Gi", Fraction(3 * 1024**3, 2)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("+1", Fraction(1)),
        ("-1", Fraction(-1)),
        ("+.5m", Fraction(1, 2000)),
        ("-1.5k", Fraction(-1500)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e+3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1E-3", Fraction(1, 1000)),
        ("2.5e2", Fraction(250)),
        ("0.1", Fraction(1, 10)),
    ],
)
def test_every_suffix_form_parses_exactly(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


def test_capital_e_alone_is_the_exa_suffix_not_an_exponent() -> None:
    assert parse_quantity("1E") == 10**18


def test_surrounding_whitespace_is_trimmed_like_quantity_unmarshal_json() -> None:
    assert parse_quantity(" 2Gi\n") == 2 * 1024**3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2, Fraction(2)),
        (0, Fraction(0)),
        (-3, Fraction(-3)),
        (0.5, Fraction(1, 2)),
        # A JSON float is read by its decimal text, not its binary approximation.
        (0.1, Fraction(1, 10)),
        (1e3, Fraction(1000)),
    ],
)
def test_json_numbers_are_quantities(value: int | float, expected: Fraction) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "abc",
        "1K",  # kilo is a lower-case k
        "1ki",
        "1KiB",
        "1 Ki",
        "1.1.1",
        ".",
        "+",
        "-",
        "1e",
        "e3",
        "1e3Ki",
        "1Ki1",
        "1m1",
        "0x10",
        "1_000",
        "--1",
        "1,5",
        "NaN",
        "inf",
        "Infinity",
        "1i",
    ],
)
def test_invalid_strings_are_rejected_with_a_message_naming_the_value(text: str) -> None:
    with pytest.raises(QuantityError, match="not a valid Kubernetes quantity") as raised:
        parse_quantity(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("value", [True, False, None, [1], {"cpu": 1}, float("nan"), float("inf")])
def test_values_that_are_not_strings_or_finite_numbers_are_rejected(value: object) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(value)  # type: ignore[arg-type]
    assert repr(value) in str(raised.value)


def test_a_number_with_absurdly_many_digits_is_rejected_not_a_crash() -> None:
    with pytest.raises(QuantityError, match="too many digits"):
        parse_quantity("1" * 5000)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10E", Fraction(MAX_INT64)),
        ("9Ei", Fraction(MAX_INT64)),
        ("-10E", Fraction(-MAX_INT64)),
        (10**30, Fraction(MAX_INT64)),
        (1e300, Fraction(MAX_INT64)),
        ("1e999999999", Fraction(MAX_INT64)),
    ],
)
def test_magnitudes_above_max_int64_are_capped_like_kubernetes(
    value: str | int | float, expected: Fraction
) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.1n", Fraction(1, 10**9)),
        ("1.5n", Fraction(2, 10**9)),
        ("1e-999999999", Fraction(1, 10**9)),
        ("-0.1n", Fraction(-1, 10**9)),
        ("0e-999999999", Fraction(0)),
    ],
)
def test_non_zero_magnitudes_below_one_nano_are_raised_to_one_nano(
    text: str, expected: Fraction
) -> None:
    assert parse_quantity(text) == expected


def test_huge_exponents_are_cheap_to_parse_and_to_format() -> None:
    started = time.perf_counter()
    units = parse_units("memory", "7e999999999")
    assert units == MAX_INT64
    assert format_units("memory", units) == str(MAX_INT64)
    assert time.perf_counter() - started < 1.0


# -- engine units -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [
        ("cpu", "1", 1000),
        ("cpu", "2", 2000),
        ("cpu", "1500m", 1500),
        ("cpu", "0.5", 500),
        ("cpu", "0.1m", 1),  # MilliValue() rounds up
        ("cpu", "1.0001m", 2),
        ("cpu", "1n", 1),
        ("cpu", "1k", 1_000_000),
        ("memory", "1.5", 2),  # Value() rounds up
        ("memory", "0.1", 1),
        ("memory", "1Ki", 1024),
        ("memory", "80Gi", 80 * 1024**3),
        ("memory", "1e3", 1000),
        ("memory", "500m", 1),
        (GPU, "2", 2),
        (GPU, "0.5", 1),
        ("pods", "110", 110),
    ],
)
def test_cpu_is_millicores_everything_else_whole_units_rounded_up(
    resource: str, text: str, units: int
) -> None:
    assert parse_units(resource, text) == units


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [("memory", "-0.5", -1), ("cpu", "-0.1m", -1), ("memory", "-1.5", -2), ("cpu", "-2", -2000)],
)
def test_negative_fractions_round_away_from_zero_so_they_stay_negative(
    resource: str, text: str, units: int
) -> None:
    assert parse_units(resource, text) == units


def test_to_units_converts_an_exact_sum_once() -> None:
    ten_tenths_of_a_millicore = sum([parse_quantity("0.1m")] * 10, Fraction(0))
    assert to_units("cpu", ten_tenths_of_a_millicore) == 1


# -- canonical formatting ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [
        ("cpu", 0, "0"),
        ("cpu", 1, "1m"),
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 53000, "53"),
        ("cpu", 1_000_000, "1k"),
        ("cpu", 1_500_000, "1500"),
        ("cpu", 2_000_000_000, "2M"),
        ("cpu", -1500, "-1500m"),
        ("memory", 0, "0"),
        # Below 1024 Kubernetes writes a BinarySI quantity as DecimalSI (CanonicalizeBytes),
        # so 1000 bytes is "1k" while 2000 bytes (not a multiple of 1024) stays "2000".
        ("memory", 1000, "1k"),
        ("memory", 1023, "1023"),
        ("memory", 2000, "2000"),
        ("memory", 1024, "1Ki"),
        ("memory", 1536, "1536"),
        ("memory", 1536 * 1024, "1536Ki"),
        ("memory", 80 * 1024**3, "80Gi"),
        ("memory", 1024**6, "1Ei"),
        ("memory", 10**9, "1000000000"),
        ("memory", -2048, "-2Ki"),
        (GPU, 0, "0"),
        (GPU, 8, "8"),
        (GPU, 1000, "1k"),
        (GPU, 1500, "1500"),
        (GPU, 1024, "1024"),
        ("pods", 110, "110"),
    ],
)
def test_format_is_the_kubernetes_canonical_form(resource: str, units: int, text: str) -> None:
    assert format_units(resource, units) == text


@given(
    resource=st.sampled_from(["cpu", "memory", GPU, "pods", "ephemeral-storage", "hugepages-1Gi"]),
    units=st.integers(min_value=-MAX_INT64, max_value=MAX_INT64),
)
def test_parse_of_format_gives_back_the_same_units(resource: str, units: int) -> None:
    """The canonical form, and the form messages quote."""
    assert parse_units(resource, format_units(resource, units)) == units
    assert parse_units(resource, format_quantity(resource, units)) == units


@given(units=st.integers(min_value=0, max_value=MAX_INT64).map(lambda value: value * 1000))
def test_whole_cores_round_trip_through_their_canonical_form(units: int) -> None:
    text = format_units("cpu", units)
    assert not text.endswith("m")
    assert parse_units("cpu", text) == units


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [
        ("ephemeral-storage", 30 * 1024**3, "30Gi"),  # canonical: 32212254720
        ("memory", 30 * 10**9, "30G"),  # canonical: 29296875Ki
        ("memory", 1500 * 10**6, "1500M"),  # canonical: 1500000000
        ("memory", 1536 * 1024**2, "1536Mi"),
        ("hugepages-2Mi", 4 * 1024**2, "4Mi"),
        ("storage", -(1024**3), "-1Gi"),
        ("memory", 1024, "1Ki"),  # a tie with 1024 goes to the binary suffix
        ("memory", 1000, "1k"),
        ("memory", 20827352832, "20827352832"),  # no suffix writes it exactly
        ("memory", 0, "0"),
        ("cpu", 1500, "1500m"),  # other resources: the canonical form
        (GPU, 1000, "1k"),
    ],
)
def test_messages_quote_amounts_of_bytes_with_the_suffix_that_writes_them_exactly(
    resource: str, units: int, text: str
) -> None:
    assert format_quantity(resource, units) == text
