"""The demo's screen: the banner, the story's steps, the live trees and a pane of recent events.

The pane merges the demo's own lines (the story's steps, the narration of runtimes and over-use)
with the Kubernetes Events of the operator (revocations, waiting pods) and of the simulated
scheduler and kubelets (binds, removals), newest last, each folded to the table's width.
"""

from __future__ import annotations

import datetime
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client

from elasticquota.kube.events import COMPONENT
from elasticquota.plan.table import WIDTH

#: How many of the most recent events the pane shows.
PANE_LINES = 14
#: Where the wrapped lines of one event start: after its time and its reason.
REASON_WIDTH = 16


@dataclass(frozen=True, slots=True)
class PaneEntry:
    """One line of the pane: when, what kind (an Event's reason or ``story``/``demo``), what."""

    at: float
    reason: str
    text: str


def _epoch(value: Any) -> float:
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return aware.timestamp()
    return 0.0


def event_entry(event: Any) -> PaneEntry | None:
    """A core/v1 Event of the operator (or of its simulation) as a pane entry; others None."""
    source = getattr(event.source, "component", None) if event.source else None
    if COMPONENT not in (source, event.reporting_component):
        return None
    involved = event.involved_object
    at = _epoch(event.last_timestamp) or _epoch(event.event_time) or _epoch(event.first_timestamp)
    subject = f"{involved.kind} {involved.namespace}/{involved.name}" if involved else ""
    return PaneEntry(at, str(event.reason or ""), f"{subject}: {event.message or ''}")


async def operator_events(api: client.ApiClient) -> list[PaneEntry]:
    """The operator's Events in every namespace."""
    listed = await client.CoreV1Api(api).list_event_for_all_namespaces(_request_timeout=10)
    return [entry for entry in map(event_entry, listed.items) if entry is not None]


def _clock(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S")


def collapse(entries: Iterable[PaneEntry]) -> list[tuple[PaneEntry, int]]:
    """Repeats of the same reason and text as one entry (the latest) with their count, oldest
    first, as ``kubectl get events`` aggregates them."""
    latest: dict[tuple[str, str], tuple[PaneEntry, int]] = {}
    for entry in sorted(entries, key=lambda item: item.at):
        _, count = latest.pop((entry.reason, entry.text), (entry, 0))
        latest[(entry.reason, entry.text)] = (entry, count + 1)
    return list(latest.values())


def render_pane(entries: Iterable[PaneEntry], lines: int = PANE_LINES) -> list[str]:
    """The newest ``lines`` entries (repeats collapsed), oldest first, each wrapped under its
    text column."""
    recent = collapse(entries)[-lines:]
    indent = " " * (2 + 8 + 2 + REASON_WIDTH + 1)
    rendered = [f"Recent events ({len(recent)} newest; Events by {COMPONENT}, and the demo's):"]
    for entry, count in recent:
        head = f"  {_clock(entry.at)}  {entry.reason[:REASON_WIDTH]:<{REASON_WIDTH}} "
        rendered.extend(
            textwrap.wrap(
                entry.text + (f" (x{count})" if count > 1 else ""),
                WIDTH,
                initial_indent=head,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
            or [head.rstrip()]
        )
    if not recent:
        rendered.append("  (none yet)")
    return rendered


def render_frame(banner: str, steps: Sequence[str], tree: str, pane: Sequence[str]) -> str:
    """The whole screen: banner, the story's steps, the trees, the pane."""
    parts = [banner, ""]
    if steps:
        parts += [*steps, ""]
    parts += [tree.rstrip("\n"), "", *pane]
    return "\n".join(parts) + "\n"
