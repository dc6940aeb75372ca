"""One AdmissionReview served the way Kopf's webhook server serves it, for the controller tests.

Shared by the webhook tests and the metrics tests (a plain module: the ``conftest`` modules of
several tiers share a name, so helpers that tests import live in uniquely named modules).
"""

from __future__ import annotations

import uuid
from typing import Any

import kopf
from kopf._cogs.structs import ephemera, references
from kopf._core.engines.admission import serve_admission_request
from kopf._core.engines.indexing import OperatorIndexers
from kopf._core.reactor.inventory import ResourceMemories

QUOTA_RESOURCE = kopf.Resource("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas")
POD_RESOURCE = kopf.Resource("", "v1", "pods")


async def admission_review(
    registry: kopf.OperatorRegistry, webhook: str, resource: kopf.Resource, **request: Any
) -> dict[str, Any]:
    """Serve one AdmissionReview through Kopf, and return its ``response`` part."""
    insights = references.Insights()
    insights.webhook_resources.add(resource)
    payload = {
        "uid": str(uuid.uuid4()),
        "resource": {"group": resource.group, "version": resource.version,
                     "resource": resource.plural},
        "userInfo": {"username": "tester"},
        **request,
    }  # fmt: skip
    response = await serve_admission_request(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": payload},
        webhook=webhook,
        settings=kopf.OperatorSettings(),
        memories=ResourceMemories(),
        memobase=ephemera.AnyMemo(kopf.Memo()),
        registry=registry,
        insights=insights,
        indices=OperatorIndexers().indices,
    )
    result: dict[str, Any] = dict(response["response"])
    return result
