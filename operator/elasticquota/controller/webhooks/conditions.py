"""The quota webhook's ``matchConditions``: the API server does not call it for an update it
would allow at once.

The validating quota webhook allows at once an UPDATE that changes none of what its rules read
(``core.validation.requests.quota_unchanged``: the spec, the parent, is-parent and tree-id
labels, and the annotations of ``WATCHED_ANNOTATIONS``). Every write of the operator's figures
(its annotations and ``status.used``) is such an update: without a condition the API server asks
the webhook about each of them, a round trip through the operator's own event loop for every
quota it writes (10,000 at a start with 10,000 quotas out of date). Kubernetes 1.28+ evaluates
``matchConditions`` (CEL) first and calls the webhook only where all of them are true: this one is
false exactly where ``quota_unchanged`` is true, so what is allowed and refused stays the same.

The expression is made from the same key lists as ``quota_unchanged`` (a test evaluates both on
the same objects). It must never fail to evaluate (an error means the failure policy: Fail, for
the quota webhook). A validating webhook's objects have passed the CRD's schema and the API
server's handling of metadata (labels and annotations are maps of strings, ``spec.min`` and
``spec.max`` maps of integers or strings); every optional field is tested with ``has`` before it
is read; and values of different types compare unequal, without an error, in the CEL of every
API server with ``matchConditions`` (cel-go's heterogeneous equality, since 2022), so that
``{"cpu": 1}`` and ``{"cpu": "1"}`` are a change, as for ``quota_unchanged``.

API servers before 1.28 send every update: ``unchanged_update`` tells the webhook server which of
them to answer "allowed" at once, without calling the handler, the quota index's catch-up or
the memory of admissions (a write of the operator's figures changes nothing they read): the same
updates cost no handling on any server, and the counts of answers are the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from elasticquota.core.validation import WATCHED_ANNOTATIONS, WATCHED_LABELS, quota_unchanged

#: The condition's name (a qualified name, as the API server requires).
UNCHANGED_UPDATE: Final = "changes-what-the-rules-read"

#: What a key may hold to be written into a CEL string literal as it is.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9./_-]+")


def _literal_list(keys: Iterable[str]) -> str:
    listed = []
    for key in keys:
        if not _PLAIN_KEY.fullmatch(key):
            raise ValueError(f"{key!r} cannot be written as a plain CEL string")
        listed.append(f"'{key}'")
    return f"[{', '.join(listed)}]"


def _entry(obj: str, field: str) -> str:
    """The value of key ``k`` in ``obj.metadata.<field>``, '' where there is none (as
    ``quota_unchanged``'s ``get(key) or ""``)."""
    entries = f"{obj}.metadata.{field}"
    return f"(has({entries}) && k in {entries} ? {entries}[k] : '')"


def _same_entries(field: str, keys: Iterable[str]) -> str:
    """Every key of ``keys`` has the same value in the object's and the old object's
    ``metadata.<field>``."""
    return (
        f"{_literal_list(keys)}.all(k, {_entry('object', field)} == {_entry('oldObject', field)})"
    )


def _spec(obj: str) -> str:
    return f"(has({obj}.spec) ? {obj}.spec : {{}})"


def unchanged_update_expression() -> str:
    """CEL that is false for an UPDATE changing nothing the quota rules read, true otherwise."""
    unchanged = " && ".join(
        (
            f"{_spec('object')} == {_spec('oldObject')}",
            _same_entries("labels", WATCHED_LABELS),
            _same_entries("annotations", WATCHED_ANNOTATIONS),
        )
    )
    return f"request.operation != 'UPDATE' || !({unchanged})"


def quota_match_conditions() -> list[dict[str, Any]]:
    """The validating quota webhook's ``matchConditions``."""
    return [{"name": UNCHANGED_UPDATE, "expression": unchanged_update_expression()}]


def unchanged_update(review: Mapping[str, Any]) -> bool:
    """Whether ``review`` (an AdmissionReview for the quota webhook) is one that API servers
    with the condition do not send: an UPDATE that ``quota_unchanged`` lets through. Older
    servers send it; the webhook server answers it at once (``server.answering``)."""
    request = review.get("request")
    if not isinstance(request, Mapping) or request.get("operation") != "UPDATE":
        return False
    new, old = request.get("object"), request.get("oldObject")
    return isinstance(new, Mapping) and isinstance(old, Mapping) and quota_unchanged(old, new)
