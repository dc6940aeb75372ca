"""Durations as annotations write them (``core.quantities.durations``): seconds or Go's h/m/s."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elasticquota.core.quantities.durations import EXPECTED, parse_duration

WEEK = 7 * 24 * 3600.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("600", 600.0), ("0", 0.0), ("0.5", 0.5), (" 90 ", 90.0), ("90s", 90.0), ("10m", 600.0),
     ("1h30m", 5400.0), ("1.5h", 5400.0), ("2h0m5s", 7205.0), (".5s", 0.5), ("168h", WEEK)],
)  # fmt: skip
def test_seconds_and_go_durations_read(text: str, seconds: float) -> None:
    assert parse_duration(text, WEEK) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1d", "1h 30m", "m", "10ms", "1h-5m", "-1m", "inf",
                                  "nan", "1e400", "h1", "10M"])  # fmt: skip
def test_anything_else_is_refused_saying_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text, WEEK)
    assert str(raised.value) == f"{text.strip()!r}: {EXPECTED}"


@pytest.mark.parametrize("text", ["-5", "604801", "169h"])
def test_a_value_outside_the_range_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text, WEEK)
    assert str(raised.value) == f"{text!r}: allowed from 0 to 604800 seconds"


@given(
    st.integers(0, 100), st.integers(0, 100), st.integers(0, 100),
)  # fmt: skip
def test_a_duration_is_the_sum_of_its_parts(hours: int, minutes: int, seconds: int) -> None:
    text = f"{hours}h{minutes}m{seconds}s"
    assert parse_duration(text, 1e9) == hours * 3600 + minutes * 60 + seconds
