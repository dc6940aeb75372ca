"""Reviews answered by the operator's handlers directly, without Kopf's handler machinery.

Kopf serves an AdmissionReview by building a cause for it (a diff of the old and the new object,
a logger per object, the object's memo), running the matching handlers through its execution
engine, and making a mutating answer's JSON patch from a deep copy and a diff of the whole
object: under a burst of pods, most of the operator's CPU per pod created (docs/performance.md).

Every handler the operator registers with Kopf (``registration``) is recorded here too, by its
webhook id, with the resource it is for (``record``). The server (``server.answering``) gives a
review of that webhook and resource to ``answer_review``, which calls the handler with what
Kopf would give it (body, old, patch, operation, subresource, userinfo, dryrun, as public Kopf
objects) and answers as Kopf does: ``allowed``, a refusal's ``status`` (its message, its code),
a mutation as a ``JSONPatch`` (``patches.json_patch``). Reviews of any other webhook or resource
still go to Kopf. Kopf's rules kept: no handler is called for a subresource (the operator's are
registered for the object itself), nor a mutating one for a DELETE; a review without userInfo
or without an object is a bad request (``ReviewDataError``, 400); an error other than a refusal
is answered allowed false with code 500 and logged at ERROR with its traceback.
"""

from __future__ import annotations

import base64
import json
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from elasticquota.controller.webhooks.admission import Registration
from elasticquota.controller.webhooks.patches import json_patch

logger = logging.getLogger("elasticquota.controller.webhooks")

#: A Kopf resource selector as registered: (group, version, plural), or (group, plural) for the
#: version its API server prefers.
Selector = tuple[str, ...]
#: How an answered review is served: the review in, the AdmissionReview answer out.
Answer = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]
#: The server's lookup: the answer for a review of webhook ``id``, or None (Kopf answers it).
Direct = Callable[[str | None, Mapping[str, Any]], Answer | None]
#: The fields of a review's resource a selector names, without and with a version.
VERSIONLESS, VERSIONED = ("group", "resource"), ("group", "version", "resource")
#: Kopf's default code of a handler's error (``kopf.AdmissionError``'s own, and any other's).
FAILED = 500


class ReviewDataError(ValueError):
    """A review lacks what every handler reads (Kopf's ``MissingDataError``, answered 400)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """A registered handler and the resource it is registered for."""

    selector: Selector
    registration: Registration

    def serves(self, resource: Mapping[str, Any]) -> bool:
        """Whether a review of ``resource`` (group, version, resource) is this handler's."""
        keys = VERSIONLESS if len(self.selector) == 2 else VERSIONED
        return tuple(resource.get(key) for key in keys) == self.selector

    async def __call__(self, review: Mapping[str, Any]) -> dict[str, Any]:
        return await answer_review(self.registration, review)


#: The handlers recorded for each Kopf registry, by webhook id (gone with the registry).
_RECORDED: weakref.WeakKeyDictionary[kopf.OperatorRegistry, dict[str, Recorded]] = (
    weakref.WeakKeyDictionary()
)


def record(registry: kopf.OperatorRegistry, selector: Selector, handler: Registration) -> None:
    """Answer reviews of ``handler``'s webhook and ``selector``'s resource directly."""
    _RECORDED.setdefault(registry, {})[handler.id] = Recorded(selector, handler)


def direct_answers(registry: kopf.OperatorRegistry | None) -> Direct | None:
    """The server's lookup of the handlers recorded for ``registry`` (None: none recorded)."""
    recorded = _RECORDED.get(registry) if registry is not None else None
    if not recorded:
        return None

    def lookup(webhook: str | None, review: Mapping[str, Any]) -> Answer | None:
        found = recorded.get(webhook or "")
        resource = (review.get("request") or {}).get("resource") or {}
        return found if found is not None and found.serves(resource) else None

    return lookup


def _calls_handler(handler: Registration, request: Mapping[str, Any]) -> bool:
    """Kopf's choice: not for a subresource; a mutating handler for a DELETE only if it is
    registered for DELETE alone."""
    if request.get("subResource") is not None:
        return False
    deleting = request.get("operation") == "DELETE"
    return not (handler.mutating and deleting and set(handler.operations) != {"DELETE"})


async def answer_review(handler: Registration, review: Mapping[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answer to ``review``, ``handler`` called as Kopf would call it."""
    request: Mapping[str, Any] = review.get("request") or {}
    raw = request.get("object") if request.get("object") is not None else request.get("oldObject")
    if request.get("userInfo") is None:
        raise ReviewDataError("User info is missing from the admission request.")
    if raw is None:
        raise ReviewDataError("Either old or new object is missing from the admission request.")
    body, patch = kopf.Body(raw), kopf.Patch()
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    if _calls_handler(handler, request):
        try:
            await _call(handler, request, body, patch)
        except Exception as error:
            response.update(allowed=False, status=_status(handler, request, error))
    if patch:
        operations = patch.as_json_patch(body) if patch.fns else json_patch(raw, patch)
        if operations:
            encoded = base64.b64encode(json.dumps(operations).encode("utf-8")).decode("ascii")
            response.update(patch=encoded, patchType="JSONPatch")
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": review.get("kind", "AdmissionReview"),
        "response": response,
    }


async def _call(
    handler: Registration, request: Mapping[str, Any], body: kopf.Body, patch: kopf.Patch
) -> None:
    old = request.get("oldObject")
    await handler.fn(
        body=body,
        old=kopf.Body(old) if old is not None else None,
        patch=patch,
        operation=request.get("operation"),
        subresource=request.get("subResource"),
        userinfo=request.get("userInfo"),
        dryrun=bool(request.get("dryRun")),
    )


def _status(handler: Registration, request: Mapping[str, Any], error: Exception) -> dict[str, Any]:
    """The answer's status for a handler's error: a refusal's message and code; any other error
    code 500, logged with its traceback (a refusal is logged by the handler itself)."""
    if not isinstance(error, kopf.AdmissionError):
        metadata = (request.get("object") or request.get("oldObject") or {}).get("metadata") or {}
        logger.error(
            "webhook %s failed on %s %s/%s",
            handler.id,
            request.get("operation"),
            metadata.get("namespace", ""),
            metadata.get("name") or metadata.get("generateName", ""),
            exc_info=error,
        )
    code = error.code if isinstance(error, kopf.AdmissionError) else None
    return {"message": str(error) or repr(error), "code": code or FAILED}
