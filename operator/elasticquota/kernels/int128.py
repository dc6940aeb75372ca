"""Exact wide-integer arithmetic for numba kernels, built from signed int64 only.

The solver multiplies two values below 2**62 and divides by sums that may exceed int64. numba has no
128-bit integers, and the kernels must also run as plain Python over numpy scalars (with
``NUMBA_DISABLE_JIT=1``), where any int64 overflow is an error. So wide values are pairs
``(hi, lo)`` meaning ``hi * 2**62 + lo`` with ``0 <= lo < 2**62``, products are formed from 31-bit
halves, and no intermediate ever leaves the signed int64 range.

``mul_divmod`` is the one entry point the kernels need: ``floor(a * b / d)`` and its remainder, for
many ``a`` with the same ``b`` and ``d`` (prepared once by ``division_ratio``). Its fast path
estimates the quotient in floating point and corrects it exactly with int64 arithmetic; the slow
path (divisors of 2**62 and more, or quotients too large for the estimate) divides bit by bit.
"""

from __future__ import annotations

import numba

LIMB_BITS = 62
LIMB = 1 << LIMB_BITS
LIMB_MASK = LIMB - 1
HALF_BITS = 31
HALF_MASK = (1 << HALF_BITS) - 1

#: The fast path needs |a*b - estimate*d| below 2**61, so its residue modulo 2**62 is unambiguous.
HALF_LIMB = 1 << (LIMB_BITS - 1)
FAST_SPAN = HALF_LIMB - 1
#: A float64 product and quotient of three rounded values is off by less than 2**-50 relative.
ESTIMATE_ERROR_BITS = 50


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def wide_add(hi: int, lo: int, value: int) -> tuple[int, int]:
    """``(hi, lo) + value`` for ``0 <= value < 2**62``."""
    lo += value
    if lo >= LIMB:
        lo -= LIMB
        hi += 1
    return hi, lo


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def wide_sub(a_hi: int, a_lo: int, b_hi: int, b_lo: int) -> tuple[int, int]:
    """``(a_hi, a_lo) - (b_hi, b_lo)``; the high limb goes negative if ``b > a``."""
    hi = a_hi - b_hi
    lo = a_lo - b_lo
    if lo < 0:
        lo += LIMB
        hi -= 1
    return hi, lo


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def wide_less(a_hi: int, a_lo: int, b_hi: int, b_lo: int) -> bool:
    """``(a_hi, a_lo) < (b_hi, b_lo)``."""
    return a_hi < b_hi or (a_hi == b_hi and a_lo < b_lo)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def wide_mul(a: int, b: int) -> tuple[int, int]:
    """The exact product of ``0 <= a, b < 2**62`` as ``(hi, lo)``."""
    a_high = a >> HALF_BITS
    a_low = a & HALF_MASK
    b_high = b >> HALF_BITS
    b_low = b & HALF_MASK
    cross = a_high * b_low + a_low * b_high  # < 2**63
    low = a_low * b_low + ((cross & HALF_MASK) << HALF_BITS)  # < 2**63
    high = a_high * b_high + (cross >> HALF_BITS) + (low >> LIMB_BITS)
    return high, low & LIMB_MASK


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def low_mul(a: int, b: int) -> int:
    """``a * b mod 2**62`` for ``0 <= a, b < 2**62``."""
    cross = (a >> HALF_BITS) * (b & HALF_MASK) + (a & HALF_MASK) * (b >> HALF_BITS)
    return ((a & HALF_MASK) * (b & HALF_MASK) + ((cross & HALF_MASK) << HALF_BITS)) & LIMB_MASK


@numba.njit(cache=True, error_model="numpy")
def wide_divmod(n_hi: int, n_lo: int, d_hi: int, d_lo: int) -> tuple[int, int, int, int]:
    """``(q_hi, q_lo, r_hi, r_lo)``: floor division of two wide values, one bit at a time.

    The slow path: about 124 shift-and-subtract steps. ``d`` must be positive.
    """
    if wide_less(n_hi, n_lo, d_hi, d_lo):
        return 0, 0, n_hi, n_lo
    q_hi = 0
    q_lo = 0
    r_hi = 0
    r_lo = 0
    top = 2 * LIMB_BITS - 1 if n_hi > 0 else LIMB_BITS - 1
    for position in range(top, -1, -1):
        limb = n_hi if position >= LIMB_BITS else n_lo
        bit = (limb >> (position % LIMB_BITS)) & 1
        r_hi = 2 * r_hi + (r_lo >> (LIMB_BITS - 1))
        r_lo = ((r_lo & (LIMB_MASK >> 1)) << 1) | bit
        q_hi = 2 * q_hi + (q_lo >> (LIMB_BITS - 1))
        q_lo = (q_lo & (LIMB_MASK >> 1)) << 1
        if not wide_less(r_hi, r_lo, d_hi, d_lo):
            r_hi, r_lo = wide_sub(r_hi, r_lo, d_hi, d_lo)
            q_lo |= 1
    return q_hi, q_lo, r_hi, r_lo


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def division_ratio(b: int, d_hi: int, d_lo: int) -> float:
    """Prepare ``mul_divmod(a, b, d, ...)`` for many ``a``: ``b / d`` as a float, or -1.0.

    -1.0 means the float estimate could be too far off to be corrected cheaply, so ``mul_divmod``
    must divide bit by bit. The estimate of ``a*b/d <= b`` is off by less than ``b / 2**50 + 1``,
    so the remainder it leaves is below ``((b >> 50) + 2) * d`` in magnitude: that must stay
    under 2**61.
    """
    if d_hi != 0 or d_lo <= 0 or d_lo > FAST_SPAN // ((b >> ESTIMATE_ERROR_BITS) + 2):
        return -1.0
    return float(b) / float(d_lo)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _estimate_divmod(a: int, b: int, d: int, ratio: float) -> tuple[int, int]:
    """``(floor(a*b/d), a*b mod d)`` from the float estimate ``a * ratio``, corrected exactly.

    The estimate's remainder ``a*b - estimate*d`` is known modulo 2**62 from the low limbs alone,
    and it is below 2**61 in magnitude (``division_ratio`` checked), which pins it down exactly;
    one floor division then corrects the quotient.
    """
    estimate = min(int(float(a) * ratio), b)
    remainder = low_mul(a, b) - low_mul(estimate, d)
    if remainder >= HALF_LIMB:
        remainder -= LIMB
    elif remainder < -HALF_LIMB:
        remainder += LIMB
    if remainder < 0 or remainder >= d:
        correction = remainder // d
        estimate += correction
        remainder -= correction * d
    return estimate, remainder


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def mul_divmod(a: int, b: int, d_hi: int, d_lo: int, ratio: float) -> tuple[int, int, int]:
    """``(q, r_hi, r_lo)`` with ``q = floor(a*b/d)`` and ``(r_hi, r_lo) = a*b mod d``.

    Requires ``0 <= a <= d``, ``0 <= a, b < 2**62`` (so ``q <= b``), ``d > 0`` and
    ``ratio == division_ratio(b, d_hi, d_lo)``.
    """
    if ratio >= 0.0:
        quotient, remainder = _estimate_divmod(a, b, d_lo, ratio)
        return quotient, 0, remainder
    p_hi, p_lo = wide_mul(a, b)
    _, quotient, r_hi, r_lo = wide_divmod(p_hi, p_lo, d_hi, d_lo)
    return quotient, r_hi, r_lo
