"""The check of the fast Pod reader against the validated path, shared by the ``test_podfast_*``
modules: the same ``(PodInfo, problems)`` for every body, and the body left as it was."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from elasticquota.api.parse import Parsed, parse_pod, parse_pod_validated
from elasticquota.api.podfast import read_pod

Raw = dict[str, Any]


def outcome(parser: Callable[[Any], Parsed], raw: Any) -> Parsed | tuple[type, str]:
    """What ``parser`` returns, or the type and text of what it raises (a body that is not a
    mapping at all breaks the validated path too)."""
    try:
        return parser(raw)
    except Exception as error:  # the error itself is the result compared
        return type(error), str(error)


def assert_same_both_ways(raw: Any) -> None:
    """``parse_pod`` (fast reader first) gives what the validated path gives, to the types and
    the order of the requests, and neither changes the body."""
    before = copy.deepcopy(raw)
    expected = outcome(parse_pod_validated, raw)
    result = outcome(parse_pod, raw)
    assert result == expected
    # Equal is not enough: True == 1, and the requests' order is part of the answer too.
    assert repr(result) == repr(expected)
    assert raw == before


def assert_fast(raw: Raw) -> None:
    """The fast reader takes the body, and agrees with the validated path."""
    assert read_pod(raw) is not None
    assert_same_both_ways(raw)
