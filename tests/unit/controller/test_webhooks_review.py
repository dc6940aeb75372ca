"""The admission webhooks' AdmissionReview round trip: Kopf embedded, the operator's server
answering its handlers' reviews itself (controller/webhooks/direct.py).

Rules (controller/webhooks/): a refusal is answered with its message and code 403 and logged once,
at INFO, on one line; a handler that fails is an ERROR with its traceback; a created quota's
defaults are answered as a JSON patch; a forbidden pod label change is refused; a status write is
let through untouched.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING

import kopf
import pytest
from admission_reviews import POD_RESOURCE, QUOTA_RESOURCE, admission_review

from elasticquota.controller.quotalog import ObjectKey, QuotaChangeLog
from elasticquota.controller.runner import make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import MUTATE_QUOTA, VALIDATE_POD, VALIDATE_QUOTA
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.validation.labels import LABEL_VALUE_RULE
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies


@pytest.fixture
def registry(synced: ControllerState, webhook_settings: Settings) -> kopf.OperatorRegistry:
    """The operator's Kopf registry, its webhooks over the synced memory."""
    return make_registry(synced, webhook_settings)


async def test_the_server_answers_a_refusal_with_the_message(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    answer = await admission_review(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=broken
    )
    assert answer["allowed"] is False
    assert answer["status"] == {"message": "resourceKey cpu of quota q min 5 > max 4", "code": 403}


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str, bool]]:
    """(logger, level, message, with a traceback) of every record."""
    return [
        (record.name, record.levelname, record.getMessage(), record.exc_info is not None)
        for record in caplog.records
    ]


async def test_a_refusal_is_logged_once_at_info_on_one_line(
    registry: kopf.OperatorRegistry, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    """Normal operation: the object and the rule at INFO; not Kopf's ERROR echo as well."""
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    broken["metadata"]["labels"][keys.LABEL_PARENT] = "d\u00e9pt"  # refused when defaulted
    caplog.set_level(logging.DEBUG)
    for webhook in (VALIDATE_QUOTA, MUTATE_QUOTA):
        answer = await admission_review(
            registry, webhook, QUOTA_RESOURCE, operation="CREATE", object=broken
        )
        assert answer["allowed"] is False
    # Warnings and errors of any logger; INFO of ours and of Kopf's per-object logger (where it
    # would echo a handler's error), not of the embedded Kopf's start and stop or its access log.
    shown = [
        record
        for record in logged(caplog)
        if record[1] not in ("DEBUG", "INFO")
        or (record[1] == "INFO" and record[0].startswith(("elasticquota.", "kopf.objects")))
    ]
    label = f"quota q: label {keys.LABEL_PARENT} has an invalid value 'd\u00e9pt'"
    assert [(name, level, traceback) for name, level, _, traceback in shown] == [
        ("elasticquota.controller.webhooks", "INFO", False)
    ] * 2
    validated, defaulted = (message for _, _, message, _ in shown)
    namespace = broken["metadata"]["namespace"]
    assert validated.startswith(f"refused CREATE ElasticQuota {namespace}/q: ")
    assert validated.endswith(f"{label}: {LABEL_VALUE_RULE} [label-value]")
    assert "resourceKey cpu of quota q min 5 > max 4 [min-le-max]; " in validated
    assert defaulted == (
        f"refused CREATE ElasticQuota {namespace}/q (defaults): "
        f"{label}: {LABEL_VALUE_RULE} [label-value]"
    )
    assert all("\n" not in message for _, _, message, _ in shown)


class CorruptLog(QuotaChangeLog):
    """A quota change log that fails when a request reads the quotas."""

    def since(self, sequence: int) -> list[tuple[ObjectKey, int]]:
        raise RuntimeError("the memory is corrupt")


async def test_a_failing_handler_is_still_an_error_with_its_traceback(
    webhook_settings: Settings, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    corrupt = ControllerState(engine=QuotaEngine(EngineSettings()), quota_log=CorruptLog())
    corrupt.mark_synced()
    registry = make_registry(corrupt, webhook_settings)
    caplog.set_level(logging.INFO)
    quota = k8s.quota("q")
    namespace = quota["metadata"]["namespace"]
    answer = await admission_review(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=quota
    )
    assert answer["allowed"] is False
    errors = [record for record in logged(caplog) if record[1] == "ERROR"]
    assert len(errors) == 1
    name, _, message, traceback = errors[0]
    assert (name, traceback) == ("elasticquota.controller.webhooks", True)
    assert message == f"webhook {VALIDATE_QUOTA} failed on CREATE {namespace}/q"
    assert answer["status"] == {"message": "the memory is corrupt", "code": 500}


def escaped(key: str) -> str:
    """A key as a JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


async def test_the_server_answers_a_create_with_the_defaults_as_a_json_patch(
    synced: ControllerState, registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("dept", is_parent=True, labels={keys.LABEL_TREE_ID: "t1"}))
    created = k8s.quota("team", max={"cpu": "2", "memory": "4Gi"}, parent="dept")
    answer = await admission_review(
        registry, MUTATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=created
    )
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(answer["patch"]))
    assert sorted(operations, key=lambda op: op["path"]) == [
        {"op": "add", "path": f"/metadata/annotations/{escaped(keys.ANNO_SHARED_WEIGHT)}",
         "value": '{"cpu":"2","memory":"4Gi"}'},
        {"op": "add", "path": f"/metadata/labels/{escaped(keys.LABEL_TREE_ID)}", "value": "t1"},
    ]  # fmt: skip


async def test_the_server_answers_a_pod_label_change_with_the_message(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    old = k8s.pod("p", quota="team")
    new = json.loads(json.dumps(old))
    new["metadata"]["labels"][keys.POD_LABEL_PREEMPTIBLE] = "false"
    answer = await admission_review(
        registry, VALIDATE_POD, POD_RESOURCE, operation="UPDATE", object=new, oldObject=old
    )
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith("Preemptible label is forbidden modify now.")


async def test_the_server_lets_a_status_write_through_untouched(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    answer = await admission_review(
        registry,
        VALIDATE_QUOTA,
        QUOTA_RESOURCE,
        operation="UPDATE",
        subResource="status",
        object=broken,
        oldObject=broken,
    )
    assert answer["allowed"] is True
