"""The webhooks registered with Kopf: one table of ``Registration`` (id, mutating, operations,
failure policy, handler), kept on ``Admission.registered`` for the tests and the configurations.

Handlers are coroutines, run on the event loop (in a thread, reading the memory would race the
loop that changes it). Each is also recorded for the server (``direct.record``), which answers
its reviews at ``/<handler id>`` itself; Kopf writes the managed configurations from them.
"""

from __future__ import annotations

from typing import Any

import kopf

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.solving import rebuild_off_loop
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks.admission import (
    MUTATE_POD,
    MUTATE_QUOTA,
    VALIDATE_POD,
    VALIDATE_QUOTA,
    Admission,
    Operation,
    Registration,
)
from elasticquota.controller.webhooks.direct import record
from elasticquota.controller.webhooks.identity import workload_handler, workload_webhooks
from elasticquota.kube.quotas import QUOTAS
from elasticquota.settings import Settings

PODS = ("", "v1", "pods")


def register_webhooks(
    registry: kopf.OperatorRegistry,
    state: ControllerState,
    settings: Settings,
    metrics: Metrics | None = None,
) -> Admission:
    """Register the admission handlers into ``registry`` (the server: ``configure_admission``);
    what was registered is kept in ``Admission.registered``."""
    admission = Admission(state, settings, metrics)
    ignore = settings.webhook_failure_policy == "Ignore"
    ignore_for_pods = settings.pod_webhook_failure_policy == "Ignore"

    def register(resource: tuple[str, ...], handler: Registration) -> None:
        on = kopf.on.mutate if handler.mutating else kopf.on.validate
        on(
            *resource,
            id=handler.id,
            operations=list(handler.operations),
            ignore_failures=handler.ignore_failures,
            registry=registry,
        )(handler.fn)
        record(registry, resource, handler)  # answered by the server itself: ``direct``
        admission.registered.append(handler)

    async def pods_caught_up() -> None:
        """The pod webhooks read the engine's topology (a profile's tree, the user limits): a
        quota change made it stale, so it is rebuilt off the loop first, never on it."""
        await admission.quotas.follow()
        await rebuild_off_loop(state.engine)

    async def validate_quota(
        body: kopf.Body,
        dryrun: bool,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        **_: Any,
    ) -> None:
        await admission.quotas.follow()  # a backlog of changed quotas: indexed in slices
        admission.answer(
            VALIDATE_QUOTA, subresource, admission.validate_quota, operation, body, old, dryrun
        )

    async def mutate_quota(
        body: kopf.Body, patch: kopf.Patch, subresource: str | None, **_: Any
    ) -> None:
        await admission.quotas.follow()
        admission.answer(MUTATE_QUOTA, subresource, admission.mutate_quota, body, patch)

    async def mutate_pod(
        body: kopf.Body,
        patch: kopf.Patch,
        subresource: str | None,
        userinfo: kopf.UserInfo | None = None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        **_: Any,
    ) -> None:
        if operation != "UPDATE":  # an update's identity is all it decides: no quota to read
            await pods_caught_up()
        admission.answer(
            MUTATE_POD, subresource, admission.mutate_pod, body, patch, userinfo, operation, old
        )

    async def validate_pod(
        body: kopf.Body,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        dryrun: bool = False,
        **_: Any,
    ) -> None:
        await pods_caught_up()
        admission.answer(
            VALIDATE_POD, subresource, admission.validate_pod, operation, body, old, dryrun
        )

    quota_operations: tuple[Operation, ...] = ("CREATE", "UPDATE", "DELETE")
    register(QUOTAS, Registration(VALIDATE_QUOTA, False, quota_operations, ignore, validate_quota))
    register(QUOTAS, Registration(MUTATE_QUOTA, True, ("CREATE",), ignore, mutate_quota))
    pod_operations: tuple[Operation, ...] = ("CREATE", "UPDATE")
    register(PODS, Registration(MUTATE_POD, True, pod_operations, ignore_for_pods, mutate_pod))
    register(PODS, Registration(VALIDATE_POD, False, pod_operations, ignore_for_pods, validate_pod))
    for selector, webhook, kind in workload_webhooks():
        handler = workload_handler(admission, webhook, kind)
        register(
            selector, Registration(webhook, True, ("CREATE", "UPDATE"), ignore_for_pods, handler)
        )
    return admission
