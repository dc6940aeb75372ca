"""Kubernetes quantities, parsed exactly and converted to the integer units the engine works in.

The reference implementation keeps cpu in millicores and every other resource as its integer value
(Kubernetes ``Value()``, rounded up to a whole unit); we do the same, with exact rational arithmetic
so that no quantity is ever rounded twice. Formatting follows the Kubernetes canonical form: cpu as
a decimal (milli) quantity, memory in binary suffixes when exact, everything else in decimal
suffixes. Messages for people quote amounts with ``format_quantity``: the same, but an amount of
bytes always with the suffix that writes it exactly (``30Gi`` of ephemeral-storage, ``30G`` of
memory), never as a count of bytes such as ``32212254720``.

As Kubernetes does when it parses a quantity, a magnitude above MaxInt64 is capped at MaxInt64 and a
non-zero magnitude below one nano is raised to one nano (Kubernetes caps only the suffixed forms; we
cap exponent forms too, so that ``"1e999999999"`` is cheap and stays printable).

``is_unlimited`` names the operator's own "no limit" ceiling (the max a profile root gets, and
anything above it): human-facing output shows such a value as "no limit", not as a huge number.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

from elasticquota.core.keys import PROFILE_ROOT_MAX

CPU: Final = "cpu"
MEMORY: Final = "memory"
_BYTE_RESOURCES: Final = frozenset({MEMORY, "storage", "ephemeral-storage"})

_BINARY_SUFFIXES: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_BY_EXPONENT: Final = {value: suffix for suffix, value in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER: Final = {value: suffix for suffix, value in _BINARY_SUFFIXES.items()}
_QUANTITY_RE: Final = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)


_MAX_QUANTITY: Final = Fraction(2**63 - 1)
_MAX_DIGITS: Final = 30
#: Longer numbers are refused (Python will not even convert them to int by default).
_MAX_NUMBER_LENGTH: Final = 1000
_NANO_DENOMINATOR: Final = 10**9


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Return the exact value of a Kubernetes quantity (``"500m"``, ``"4Gi"``, ``"1e3"``, ``2``)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity {value!r} is a boolean, not a number")
    if isinstance(value, int):
        return _bounded(Fraction(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity {value!r} is not finite")
        return _bounded(Fraction(str(value)))
    if not isinstance(value, str):
        raise QuantityError(f"quantity {value!r} must be a string or a number")
    match = _QUANTITY_RE.match(value.strip())
    if match is None or not value.strip():
        raise QuantityError(f"quantity {value!r} is not a valid Kubernetes quantity")
    if len(match["number"]) > _MAX_NUMBER_LENGTH:
        raise QuantityError(f"quantity {value[:40]!r}... has too many digits")
    number = Fraction(match["number"])
    if match["binary"]:
        return _bounded(number * Fraction(1024) ** _BINARY_SUFFIXES[match["binary"]])
    if match["exp"]:
        exponent = int(match["exp"][1:])
        # |number| lies within 10**±len(text): beyond that the result is capped or raised anyway.
        limit = len(match["number"]) + _MAX_DIGITS
        return _bounded(number * Fraction(10) ** max(-limit, min(limit, exponent)))
    return _bounded(number * Fraction(10) ** _DECIMAL_SUFFIXES[match["decimal"] or ""])


def _bounded(value: Fraction) -> Fraction:
    """Kubernetes' bounds: magnitude at most MaxInt64, a non-zero magnitude at least one nano."""
    magnitude = abs(value)
    if magnitude > _MAX_QUANTITY:
        magnitude = _MAX_QUANTITY
    elif _NANO_DENOMINATOR % magnitude.denominator:
        magnitude = Fraction(math.ceil(magnitude * _NANO_DENOMINATOR), _NANO_DENOMINATOR)
    return -magnitude if value < 0 else magnitude


def to_units(resource: str, value: Fraction) -> int:
    """Convert an exact value to the engine's integer unit: millicores for cpu, whole units else.

    Like Kubernetes ``MilliValue()`` / ``Value()``, fractions are rounded up, away from zero
    (``"0.1m"`` cpu is 1, ``"-0.5"`` memory is -1 and so still negative).
    """
    scaled = value * 1000 if resource == CPU else value
    return math.ceil(scaled) if scaled >= 0 else -math.ceil(-scaled)


def unlimited_units(resource: str) -> int:
    """The smallest value that means "no limit": a profile root's max, MaxInt64 / 2000 (in cores
    for cpu, so 1000 times that in millicores; 4 PiB of memory). The system and default quotas'
    default max and the solver's clamp (2**62 - 1) are above it."""
    return PROFILE_ROOT_MAX * 1000 if resource == CPU else PROFILE_ROOT_MAX


def is_unlimited(resource: str, units: int) -> bool:
    """Whether ``units`` is at or above the "no limit" ceiling of ``resource``."""
    return units >= unlimited_units(resource)


def parse_units(resource: str, value: str | int | float) -> int:
    """Parse a quantity for ``resource`` straight into engine units."""
    return to_units(resource, parse_quantity(value))


def counts_bytes(resource: str) -> bool:
    """Whether the resource is an amount of bytes (memory, storage, ephemeral-storage, huge
    pages): people read those in binary suffixes, whatever suffix the API's canonical form has."""
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def format_units(resource: str, units: int) -> str:
    """Format engine units as the canonical Kubernetes quantity the reference would write.

    cpu is a milli quantity (DecimalSI), memory BinarySI, every other resource DecimalSI.
    """
    if resource == CPU:
        return _format_decimal(units, exponent=-3)
    if resource == MEMORY:
        return format_binary(units)
    return _format_decimal(units, exponent=0)


def _format_decimal(mantissa: int, exponent: int) -> str:
    """Canonical DecimalSI: the largest exponent (a multiple of 3) that keeps the mantissa whole."""
    if mantissa == 0:
        return "0"
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def format_binary(units: int) -> str:
    """Units in Kubernetes' canonical BinarySI form: below 1024 in magnitude plain decimal, else
    the largest exact 1024 power (``2Gi``, ``1536Mi``)."""
    if -1024 < units < 1024:
        return _format_decimal(units, exponent=0)
    power = 0
    while units % 1024 == 0 and power < 6:
        units //= 1024
        power += 1
    if power == 0:
        return str(units)
    return f"{units}{_BINARY_BY_POWER[power]}"


def format_bytes(units: int) -> str:
    """An amount of bytes as people write it: of its binary-suffixed (``30Gi``), decimal-suffixed
    (``30G``) and plain forms, the exact one with the fewest characters, the binary one on a tie.
    Never a bare count of bytes where a suffix writes it exactly: ``format_units`` gives
    ``32212254720`` for 30Gi of ephemeral-storage (its canonical form is DecimalSI) and
    ``29296875Ki`` for 30G of memory."""
    binary, decimal = format_binary(units), _format_decimal(units, exponent=0)
    return decimal if len(decimal) < len(binary) else binary


def format_quantity(resource: str, units: int) -> str:
    """Engine units as a message quotes them: the Kubernetes quantity (``format_units``: ``1500m``
    of cpu, ``4`` GPUs), an amount of bytes (``counts_bytes``) as ``format_bytes`` writes it.
    ``format_units`` stays for what is written to the API (annotations, ``status``, JSON)."""
    return format_bytes(units) if counts_bytes(resource) else format_units(resource, units)
