"""Readers of single field values, shared by the validated parsers (``parse``) and the fast Pod
reader (``podfast``) so that both read a label or a timestamp the same way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from elasticquota.core.userlimits.identity import read_identity, shared_application


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


@dataclass(frozen=True, slots=True)
class PodIdentity:
    """Who a pod runs for and its application, as ``PodInfo`` holds them; ``problem`` says why a
    ``user-info`` annotation that is present was not used (the pod then has no identity)."""

    user: str
    groups: tuple[str, ...]
    application: str
    problem: str = ""


def pod_identity(
    namespace: str, name: str, labels: Mapping[str, str], metadata: Mapping[str, Any]
) -> PodIdentity:
    """The identity (``user-info`` annotation and its alias; none: user "") and the application
    key (label and aliases, else the controller's uid, else the pod) of a pod's metadata. Any
    shape of ``ownerReferences`` is tolerated: a broken one just names no controller."""
    annotations = metadata.get("annotations")
    reading = read_identity(annotations if isinstance(annotations, Mapping) else {}, "")
    # An application of its own is held as "": ``PodInfo.application_key`` builds it when asked.
    application = shared_application(namespace, labels, metadata.get("ownerReferences")) or ""
    identity = reading.identity
    return PodIdentity(identity.user, identity.groups, application, reading.problem)
