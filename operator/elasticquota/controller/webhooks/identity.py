"""The identity webhooks: who a new pod or workload runs for, so that user and group limits count
the right person.

``mutate-pod`` (``controller.webhooks``) stamps each new pod, and one webhook per workload kind,
``mutate-workload-<plural>`` (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs;
CREATE and UPDATE), stamps the pod template, by the rule of ``core.userlimits.stamping``: the
requester's own identity (the admission request's ``userInfo``), unless a trusted requester (a
controller, ``TRUSTED_IDENTITY_USERS`` / ``_GROUPS``) passes on the identity the object carries.
The stamp does not depend on the operator's memory, so it is made from the first request on,
before the initial listing; the workload webhooks follow the pod webhooks' failure policy and
namespaces.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import kopf

from elasticquota.core.userlimits.identity import identity_from_user_info
from elasticquota.core.userlimits.stamping import TrustRules, stamp_identity
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from elasticquota.controller.webhooks.admission import Admission

logger = logging.getLogger(__name__)

#: The workloads whose pod templates are stamped: (API group, plural, kind), each at the version
#: its API server prefers (Kopf's selectors without a version).
WORKLOADS: Final = (
    ("apps", "deployments", "Deployment"),
    ("apps", "replicasets", "ReplicaSet"),
    ("apps", "statefulsets", "StatefulSet"),
    ("apps", "daemonsets", "DaemonSet"),
    ("batch", "jobs", "Job"),
    ("batch", "cronjobs", "CronJob"),
)
#: CronJobs are batch/v1beta1 only before Kubernetes 1.21, where batch/v1 is the group's
#: preferred version: a handler of its own (``mutate-workload-cronjobs-v1beta1``) for managed
#: configurations on those servers; it matches nothing on later ones.
LEGACY_CRONJOBS: Final = ("batch", "v1beta1", "cronjobs")
#: The API groups and plurals of those webhooks (``webhooks.matches_pods`` gives them the pod
#: webhooks' namespaceSelector).
WORKLOAD_RESOURCES: Final = frozenset((group, plural) for group, plural, _ in WORKLOADS)


def mutate_workload_id(plural: str) -> str:
    """The webhook (and its path) of one workload kind: ``mutate-workload-deployments``."""
    return f"mutate-workload-{plural}"


def trust_rules(settings: Settings) -> TrustRules:
    return TrustRules(
        users=tuple(settings.trusted_identity_users),
        groups=tuple(settings.trusted_identity_groups),
    )


def stamp_request(
    kind: str,
    operation: str | None,
    body: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    userinfo: Mapping[str, Any] | None,
    rules: TrustRules,
    patch: kopf.Patch,
) -> None:
    """Decide the object's identity for this request and put it in ``patch``."""
    requester = identity_from_user_info(userinfo)
    stamp = stamp_identity(kind, operation or "", body, old, requester, rules)
    if stamp is None:
        return
    node: dict[str, Any] = {"annotations": dict(stamp.annotations)}
    for key in reversed(stamp.path):
        node = {key: node}
    patch.update(node)
    metadata = body.get("metadata") or {}
    logger.debug(
        "identity of %s %s/%s: %s",
        kind,
        metadata.get("namespace", ""),
        metadata.get("name") or metadata.get("generateName", ""),
        stamp.reason,
    )


def workload_webhooks() -> list[tuple[tuple[str, ...], str, str]]:
    """(Kopf selector, webhook id, kind) of every workload webhook, the legacy CronJobs' last."""
    found: list[tuple[tuple[str, ...], str, str]] = [
        ((group, plural), mutate_workload_id(plural), kind) for group, plural, kind in WORKLOADS
    ]
    found.append((LEGACY_CRONJOBS, f"{mutate_workload_id('cronjobs')}-v1beta1", "CronJob"))
    return found


def workload_handler(
    admission: Admission, webhook: str, kind: str
) -> Callable[..., Awaitable[None]]:
    """The Kopf handler of one workload webhook: the template stamped, the answer counted."""

    async def mutate_workload(
        body: kopf.Body,
        patch: kopf.Patch,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        userinfo: kopf.UserInfo | None = None,
        **_: Any,
    ) -> None:
        admission.answer(
            webhook,
            subresource,
            stamp_request,
            kind,
            operation,
            body,
            old,
            userinfo,
            admission.trust,
            patch,
        )

    return mutate_workload
