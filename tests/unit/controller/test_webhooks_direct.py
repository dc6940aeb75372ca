"""The reviews the server answers with the operator's handlers, without Kopf's handler machinery.

Rules (controller/webhooks/direct.py): a review of a recorded webhook and its resource is
answered by its handler, called with Kopf's public objects and the review's fields; a refusal is
answered with its message and code (500 when it has none), any other error with code 500; a
mutation is a base64 JSON patch; no handler is called for a subresource, nor a mutating one for
a DELETE; the answer carries the review's uid, API version and kind; a webhook or a resource not
recorded is left to Kopf.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import kopf
import pytest

from elasticquota.controller.webhooks.admission import Registration
from elasticquota.controller.webhooks.direct import (
    ReviewDataError,
    answer_review,
    direct_answers,
    record,
)

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}}
PODS = {"group": "", "version": "v1", "resource": "pods"}


def review(**request: Any) -> dict[str, Any]:
    payload = {"uid": "u1", "resource": PODS, "operation": "CREATE", "object": POD,
               "userInfo": {"username": "sue"}, **request}  # fmt: skip
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": payload}


class Handler:
    """A handler that records how it was called and does what it is given."""

    def __init__(self, does: Any = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.does = does

    async def __call__(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        if self.does is not None:
            self.does(**kwargs)


def registration(handler: Handler, mutating: bool = False) -> Registration:
    return Registration("hook", mutating, ("CREATE", "UPDATE"), True, handler)


async def test_the_handler_gets_the_reviews_fields_as_kopf_gives_them() -> None:
    handler = Handler()
    old = {**POD, "metadata": {**POD["metadata"], "labels": {"a": "b"}}}
    answer = await answer_review(
        registration(handler), review(operation="UPDATE", oldObject=old, dryRun=True)
    )
    assert answer == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u1", "allowed": True},
    }
    [call] = handler.calls
    assert isinstance(call["body"], kopf.Body) and call["body"] == POD
    assert isinstance(call["old"], kopf.Body) and call["old"] == old
    assert isinstance(call["patch"], kopf.Patch) and not call["patch"]
    assert (call["operation"], call["subresource"], call["dryrun"]) == ("UPDATE", None, True)
    assert call["userinfo"] == {"username": "sue"}


async def test_a_mutation_is_answered_as_a_json_patch() -> None:
    def gate(patch: kopf.Patch, **_: Any) -> None:
        patch.spec["schedulingGates"] = [{"name": "g"}]
        patch.metadata.labels["x"] = "1"

    answer = await answer_review(registration(Handler(gate), mutating=True), review())
    response = answer["response"]
    assert (response["allowed"], response["patchType"]) == (True, "JSONPatch")
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/metadata/labels", "value": {"x": "1"}},
        {"op": "add", "path": "/spec", "value": {"schedulingGates": [{"name": "g"}]}},
    ]


async def test_a_patch_of_functions_is_made_by_kopf() -> None:
    def rename(patch: kopf.Patch, **_: Any) -> None:
        patch.fns.append(lambda body: body["metadata"].update(name="q"))

    answer = await answer_review(registration(Handler(rename), mutating=True), review())
    operations = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert operations == [{"op": "replace", "path": "/metadata/name", "value": "q"}]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (kopf.AdmissionError("no room", code=403), {"message": "no room", "code": 403}),
        (kopf.AdmissionError("loading", code=None), {"message": "loading", "code": 500}),
        (RuntimeError("broken"), {"message": "broken", "code": 500}),
        (RuntimeError(), {"message": "RuntimeError()", "code": 500}),
    ],
)
async def test_an_error_is_answered_with_its_message_and_code(
    error: Exception, status: dict[str, Any]
) -> None:
    def fail(**_: Any) -> None:
        raise error

    answer = await answer_review(registration(Handler(fail)), review())
    assert answer["response"] == {"uid": "u1", "allowed": False, "status": status}


@pytest.mark.parametrize(
    ("mutating", "request_fields"),
    [
        (False, {"subResource": "status"}),
        (True, {"subResource": "status"}),
        (True, {"operation": "DELETE", "object": None, "oldObject": POD}),
    ],
)
async def test_no_handler_is_called_where_kopf_calls_none(
    mutating: bool, request_fields: dict[str, Any]
) -> None:
    handler = Handler()
    answer = await answer_review(registration(handler, mutating), review(**request_fields))
    assert answer["response"] == {"uid": "u1", "allowed": True}
    assert handler.calls == []


async def test_a_validating_handler_is_called_for_a_delete_with_the_old_object() -> None:
    handler = Handler()
    await answer_review(
        registration(handler), review(operation="DELETE", object=None, oldObject=POD)
    )
    assert [call["body"] for call in handler.calls] == [POD]


async def test_a_review_without_what_kopf_requires_is_refused_as_bad() -> None:
    with pytest.raises(ReviewDataError, match="User info is missing"):
        await answer_review(registration(Handler()), review(userInfo=None))
    with pytest.raises(ReviewDataError, match="Either old or new object is missing"):
        await answer_review(registration(Handler()), review(object=None))


def test_only_recorded_webhooks_and_their_resources_are_answered() -> None:
    registry = kopf.OperatorRegistry()
    assert direct_answers(registry) is None and direct_answers(None) is None
    pods, deployments = Handler(), Handler()
    record(registry, ("", "v1", "pods"), Registration("pods", True, ("CREATE",), True, pods))
    record(
        registry,
        ("apps", "deployments"),
        Registration("deploy", True, ("CREATE",), True, deployments),
    )
    lookup = direct_answers(registry)
    assert lookup is not None
    assert lookup("pods", review()) is not None
    assert lookup("pods", review(resource={**PODS, "version": "v2"})) is None
    assert lookup("other", review()) is None and lookup(None, review()) is None
    for version in ("v1", "v1beta1"):
        apps = {"group": "apps", "version": version, "resource": "deployments"}
        assert lookup("deploy", review(resource=apps)) is not None
    assert direct_answers(kopf.OperatorRegistry()) is None  # another registry's: none
