"""Readers of single field values, shared by the validated parsers (``parse``) and the fast Pod
reader (``podfast``) so that both read a label or a timestamp the same way."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime


def first_label(labels: Mapping[str, str], aliases: tuple[str, ...]) -> str:
    """The value of the first alias set to a non-empty value, or ""."""
    for key in aliases:
        if labels.get(key):
            return labels[key]
    return ""


def timestamp(text: str | None) -> float | None:
    """RFC 3339 to epoch seconds; a time without an offset is UTC, not the local time zone."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
