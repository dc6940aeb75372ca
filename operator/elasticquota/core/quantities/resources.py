"""Resource lists in engine units: parsing, arithmetic and the JSON annotation format.

A ``ResourceList`` maps a resource name to an integer in engine units (millicores for cpu). A
missing key and a key with value 0 differ only where the reference says so (which keys a quota
tracks, which keys a comparison looks at); the helpers here never invent keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from elasticquota.core.quantities.quantity import QuantityError, format_units, parse_units

ResourceList = dict[str, int]


def parse_resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """Parse a Kubernetes ResourceList (quantities as strings or numbers) into engine units.

    Raises ``QuantityError`` naming the resource when a value is not a quantity.
    """
    result: ResourceList = {}
    for name, value in (raw or {}).items():
        try:
            result[str(name)] = parse_units(str(name), value)
        except QuantityError as error:
            raise QuantityError(f"{name}: {error}") from None
    return result


def parse_resource_list_json(text: str) -> ResourceList:
    """Parse a ResourceList annotation: a JSON object of quantities (strings or numbers)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise QuantityError(f"malformed JSON ({error.msg} at position {error.pos})") from None
    if not isinstance(raw, dict):
        raise QuantityError(f"expected a JSON object of quantities, got {type(raw).__name__}")
    return parse_resource_list(raw)


def format_resource_list(resources: Mapping[str, int]) -> dict[str, str]:
    """Quantity strings, keys sorted: the value of an RL in ``plan`` JSON and in annotations."""
    return {name: format_units(name, resources[name]) for name in sorted(resources)}


def to_annotation(resources: Mapping[str, int]) -> str:
    """The reference's annotation format: compact JSON, sorted keys, quantities as strings."""
    return json.dumps(format_resource_list(resources), separators=(",", ":"))


def add(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Per-key sum over the union of keys."""
    result = dict(left)
    for name, value in right.items():
        result[name] = result.get(name, 0) + value
    return result


def subtract_clamped(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Per-key ``left - right`` over the union of keys, negative results clamped to 0."""
    result = dict(left)
    for name, value in right.items():
        result[name] = max(0, result.get(name, 0) - value)
    return result


def mask(resources: Mapping[str, int], keys: Iterable[str]) -> ResourceList:
    """Only the entries whose key is in ``keys``."""
    wanted = set(keys)
    return {name: value for name, value in resources.items() if name in wanted}


def scale(resources: Mapping[str, int], factor: int) -> ResourceList:
    """Every entry multiplied by an integer factor (used for +/- pod deltas)."""
    return {name: value * factor for name, value in resources.items()}


def exceeding(amount: Mapping[str, int], limit: Mapping[str, int]) -> list[str]:
    """Names, sorted, of the keys present in both lists where ``amount > limit``."""
    return sorted(name for name, value in amount.items() if name in limit and value > limit[name])


def negative_keys(resources: Mapping[str, int]) -> list[str]:
    """Names, sorted, of the keys whose value is below zero."""
    return sorted(name for name, value in resources.items() if value < 0)


def drop_zeros(resources: Mapping[str, int]) -> ResourceList:
    """The entries that are not zero: the zero-insensitive view used when comparing annotations."""
    return {name: value for name, value in resources.items() if value != 0}


class SharedLists:
    """Equal resource lists as one dict: ``share(resources)`` gives the first list it was given
    with the same items in the same order (or ``resources`` itself, kept for the next ones).

    Pods of one workload ask for the same resources: 100,000 pods make a few hundred distinct
    requests, and one dict for each pod was ~220 bytes of the ~800 the engine holds per pod. The
    lists given out are shared, so they must never be changed in place (``PodInfo`` holds them
    read-only). At most ``limit`` lists are kept; past that the memo starts again (lists given out
    stay valid: a new one is only not shared with them)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._lists: dict[tuple[tuple[str, int], ...], ResourceList] = {}

    def share(self, resources: ResourceList) -> ResourceList:
        items = tuple(resources.items())
        shared = self._lists.get(items)
        if shared is not None:
            return shared
        if len(self._lists) >= self.limit:
            self._lists.clear()
        self._lists[items] = resources
        return resources
