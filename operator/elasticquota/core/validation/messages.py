"""Formatting helpers for violation messages (names, amounts, where a value was written)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.quantity import format_quantity, to_units
from elasticquota.core.validation.facts import NANOS


def go_list(items: Iterable[str]) -> str:
    """Go's ``%v`` of a slice, as the reference prints resource names: ``[cpu memory]``."""
    return "[" + " ".join(items) + "]"


def amounts_text(resources: Mapping[str, int], names: Iterable[str]) -> str:
    """``cpu 2, ephemeral-storage 30Gi``: each name with its amount as messages quote it."""
    return ", ".join(f"{name} {format_quantity(name, resources.get(name, 0))}" for name in names)


def exact_text(nanos: Mapping[str, int], names: Iterable[str]) -> str:
    """``amounts_text`` of exact amounts (``facts.exact_amounts``), in engine units."""
    units = {name: to_units(name, Fraction(nanos.get(name, 0), NANOS)) for name in names}
    return amounts_text(units, units)


def written_text(quota: Quota, where: str, name: str) -> str:
    value = quota.written(where).get(name)
    if value is None:
        return format_quantity(name, getattr(quota, where).get(name, 0))
    return str(value)


def some_names(items: list[str], shown: int = 2) -> str:
    """The reference's pod list: up to two names, then ``...``."""
    return ", ".join(items if len(items) <= shown else [*items[:shown], "..."])
