"""Exact wide arithmetic: the int64-only helpers against Python's arbitrary-precision ints."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elasticquota.kernels import int128, reference, waterfill
from elasticquota.kernels.arrays import MAXV

LIMB = 2**62
below_limb = st.one_of(
    st.integers(0, LIMB - 1), st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**61, LIMB - 1])
)


def i64(value: int) -> np.int64:
    """Kernel arguments as numpy scalars, so that any overflow warns even without the JIT."""
    return np.int64(value)


def split_wide(value: int) -> tuple[int, int]:
    return value // LIMB, value % LIMB


@settings(max_examples=300)
@given(a=below_limb, b=below_limb)
def test_wide_mul_and_low_mul(a: int, b: int) -> None:
    assert tuple(int(x) for x in int128.wide_mul(i64(a), i64(b))) == split_wide(a * b)
    assert int(int128.low_mul(i64(a), i64(b))) == a * b % LIMB


@settings(max_examples=300)
@given(n=st.integers(0, 2**124 - 1), d=st.integers(1, 2**124 - 1))
def test_wide_divmod(n: int, d: int) -> None:
    result = int128.wide_divmod(*map(i64, split_wide(n)), *map(i64, split_wide(d)))
    q_hi, q_lo, r_hi, r_lo = (int(x) for x in result)
    assert (q_hi * LIMB + q_lo, r_hi * LIMB + r_lo) == divmod(n, d)


@st.composite
def mul_divmod_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    """``a <= d``, ``b < 2**62``; divisors near the fast path's limit and beyond 2**62."""
    b = draw(below_limb)
    limit = int128.FAST_SPAN // ((b >> int128.ESTIMATE_ERROR_BITS) + 2)
    d = draw(
        st.one_of(
            st.integers(1, 2**62 - 1),
            st.integers(max(1, limit - 3), limit + 3),
            st.integers(2**62, 2**70),
            st.integers(1, 1000),
        )
    )
    a = draw(st.one_of(st.integers(0, min(d, LIMB - 1)), st.just(min(d, LIMB - 1))))
    return a, b, d


@settings(max_examples=500)
@given(case=mul_divmod_cases())
def test_mul_divmod(case: tuple[int, int, int]) -> None:
    a, b, d = case
    d_hi, d_lo = map(i64, split_wide(d))
    ratio = int128.division_ratio(i64(b), d_hi, d_lo)
    q, r_hi, r_lo = (int(x) for x in int128.mul_divmod(i64(a), i64(b), d_hi, d_lo, ratio))
    assert (q, r_hi * LIMB + r_lo) == divmod(a * b, d)


def test_fast_path_is_taken_for_memory_sized_values() -> None:
    assert int128.division_ratio(i64(2**45), i64(0), i64(2**50)) > 0
    assert int128.division_ratio(i64(MAXV), i64(0), i64(2**62 - 1)) < 0
    assert int128.division_ratio(i64(5), i64(1), i64(0)) < 0


@pytest.mark.parametrize("children", [5, 40, 200])
def test_exact_at_exbibyte_scale(children: int) -> None:
    """Weights and requests near 2**60: w*pool and the sum of weights do not fit in int64."""
    rng = np.random.default_rng(children)
    weight = [int(2**60 + x) for x in rng.integers(0, 2**59, size=children)]
    request = [int(2**60 + x) for x in rng.integers(0, 2**60, size=children)]
    floor = [int(x) for x in rng.integers(0, 2**52, size=children)]
    total = MAXV - int(rng.integers(0, 2**40))
    assert sum(weight) >= 2**62

    pool = total - sum(floor)
    shares = waterfill.largest_remainder_split(pool, np.array(weight)).tolist()
    floors = [w * pool // sum(weight) for w in weight]
    remainders = [w * pool % sum(weight) for w in weight]
    leftover = pool - sum(floors)
    lucky = sorted(range(children), key=lambda i: (-remainders[i], i))[:leftover]
    assert shares == [f + (i in lucky) for i, f in enumerate(floors)]

    runtime = waterfill.water_fill(total, np.array(request), np.array(floor), np.array(weight))
    assert runtime.tolist() == reference.water_fill(total, request, floor, weight)
    assert sum(runtime.tolist()) == total


def test_exact_with_divisor_just_inside_the_fast_path() -> None:
    """Large pools with weights summing right at the fast path's limit (float estimate stressed)."""
    pool = MAXV - 12345
    limit = int128.FAST_SPAN // ((pool >> int128.ESTIMATE_ERROR_BITS) + 2)
    weight = [limit // 3, limit // 3, limit - 2 * (limit // 3)]
    assert int128.division_ratio(i64(pool), i64(0), i64(sum(weight))) > 0
    shares = waterfill.largest_remainder_split(pool, np.array(weight)).tolist()
    assert shares == reference.largest_remainder_split(pool, weight)
