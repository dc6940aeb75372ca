"""Who a pod runs for and which application it belongs to, read from the pod's own metadata.

Identity: the annotation ``elasticquota.dev/user-info`` (YuniKorn's
``yunikorn.apache.org/user.info`` is read as an alias), JSON
``{"user": "sue", "groups": ["dev", "test"]}``, the format YuniKorn's admission controller writes.
A pod without it, or with a value that is not such an object, runs for the configurable default
user with no groups (YuniKorn's anonymous user is ``nobody``); the reading says why, so that
callers can report it. Whether the annotation may be trusted (who wrote it) is the pod webhook's
business, not this module's.

Application: the label ``elasticquota.dev/application`` (aliases ``applicationId`` and
``yunikorn.apache.org/app-id``), else the uid of the pod's controller (ownerReferences with
``controller: true``), else the pod itself. Label values are unique only within a namespace, so the
key always starts with the namespace: two namespaces' ``spark-1`` are two applications.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from elasticquota.core.keys import ANNO_USER_INFO_ALIASES, first_label
from elasticquota.core.keys import POD_LABEL_APPLICATION_ALIASES as APPLICATION_LABELS
from elasticquota.core.model.models import own_application

#: YuniKorn's anonymous user.
DEFAULT_USER: Final = "nobody"


@dataclass(frozen=True, slots=True)
class Identity:
    """A user and the groups it belongs to, in the order given."""

    user: str
    groups: tuple[str, ...] = ()

    def annotation(self) -> str:
        """The ``user-info`` annotation value (compact JSON, YuniKorn's layout)."""
        return json.dumps({"user": self.user, "groups": list(self.groups)}, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class IdentityReading:
    """The identity a pod counts for, the annotation it came from ("" for the default) and,
    when the annotation was present but unusable, why it was not used."""

    identity: Identity
    source: str = ""
    problem: str = ""


def parse_user_info(text: str) -> Identity:
    """Parse a ``user-info`` value; ``ValueError`` says what is wrong with it."""
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(raw, Mapping):
        raise ValueError('expected a JSON object {"user": ..., "groups": [...]}')
    user = raw.get("user")
    if not isinstance(user, str) or not user.strip():
        raise ValueError('"user" must be a non-empty text')
    groups = raw.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(group, str) for group in groups):
        raise ValueError('"groups" must be a list of texts')
    if any(_has_control(name) for name in (user, *groups)):
        raise ValueError("names must not contain control characters")
    return Identity(user, _unique(group for group in groups if group))


def _has_control(name: str) -> bool:
    return any(ord(char) < 32 or ord(char) == 127 for char in name)


def read_identity(
    annotations: Mapping[str, str] | None, default_user: str = DEFAULT_USER
) -> IdentityReading:
    """The identity a pod counts for: the first of the user-info annotations that is present."""
    annotations = annotations or {}
    for key in ANNO_USER_INFO_ALIASES:
        text = annotations.get(key)
        if text is None:
            continue
        try:
            return IdentityReading(parse_user_info(text), source=key)
        except ValueError as error:
            return IdentityReading(
                Identity(default_user),
                problem=f"annotation {key} ignored, counted as "
                + (f"user {default_user}" if default_user else "the default user")
                + f": {error}",
            )
    return IdentityReading(Identity(default_user))


def identity_from_user_info(user_info: Mapping[str, Any] | None) -> Identity | None:
    """The identity of an admission request's ``userInfo`` (``username``, ``groups``); None when
    the request names no user."""
    user_info = user_info or {}
    user = user_info.get("username")
    if not isinstance(user, str) or not user:
        return None
    groups = user_info.get("groups") or []
    return Identity(user, _unique(str(group) for group in groups if group))


def application_id(
    namespace: str,
    name: str,
    labels: Mapping[str, str] | None = None,
    owner_references: Sequence[Any] | None = None,
) -> str:
    """The pod's application key, always ``<namespace>/<id>``.

    ``<id>`` is the first non-empty application label, else ``uid:<controller uid>``, else
    ``pod:<pod name>`` (an application of its own)."""
    shared = shared_application(namespace, labels, owner_references)
    return own_application(namespace, name) if shared is None else shared


def shared_application(
    namespace: str,
    labels: Mapping[str, str] | None = None,
    owner_references: Sequence[Any] | None = None,
) -> str | None:
    """The application key a pod can share with others (``application_id`` by its label or its
    controller), or None when the pod is an application of its own."""
    value = first_label(labels or {}, APPLICATION_LABELS)
    if value:
        return f"{namespace}/{value}"
    for owner in owner_references if isinstance(owner_references, list | tuple) else ():
        if isinstance(owner, Mapping) and owner.get("controller") is True and owner.get("uid"):
            return f"{namespace}/uid:{owner['uid']}"
    return None


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
