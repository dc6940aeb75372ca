"""Durations as annotations write them: seconds (``600``, ``0.5``) or Go's notation (``10m``,
``1h30m``, ``90s``, ``1.5h``), as ``kubectl`` and Kubernetes' own duration fields take them.

Only hours, minutes and seconds: an annotation that says how long a pod runs has no use for
milliseconds, and a ``d`` for days is not Go's (it would be refused there).
"""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
EXPECTED = "expected seconds (600) or a duration of hours, minutes and seconds (10m, 1h30m)"


def parse_duration(text: str, maximum: float) -> float:
    """Seconds ``text`` says, from 0 to ``maximum``; ``ValueError`` saying what is wrong."""
    written = text.strip()
    seconds = _seconds(written)
    if seconds is None:
        raise ValueError(f"{written!r}: {EXPECTED}")
    if not 0 <= seconds <= maximum:
        raise ValueError(f"{written!r}: allowed from 0 to {maximum:g} seconds")
    return seconds


def _seconds(written: str) -> float | None:
    """The seconds of a plain number or of a whole run of ``<number><unit>`` parts; None when it
    is neither (a negative number reads, to be refused for its range)."""
    try:
        plain = float(written)
    except ValueError:
        pass
    else:
        return plain if math.isfinite(plain) else None
    parts = list(_PART.finditer(written))
    if not parts or "".join(part.group(0) for part in parts) != written:
        return None
    return sum(float(part.group(1)) * _UNIT_SECONDS[part.group(2)] for part in parts)
