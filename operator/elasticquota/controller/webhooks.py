"""Admission webhooks: Kopf validating / mutating handlers over the operator's memory, and their
HTTPS server.

Three webhooks, as the reference's (§4): ``validate-elasticquota`` (CREATE, UPDATE, DELETE),
``mutate-elasticquota`` (CREATE) and ``validate-pod`` (CREATE, UPDATE). The handlers only parse,
call the pure rules of ``elasticquota.core.validation`` / ``core.mutation`` and turn violations
into ``kopf.AdmissionError`` (HTTP 403, every violation's message joined by ``; ``). The rules read
a ``ClusterView`` built from the memory the watch keeps current (``ControllerState``), plus what
was admitted a moment ago and not yet seen by the watch (``RecentAdmissions``): without it a child
created right after its parent would be refused because the parent "does not exist" yet (the
reference likewise updates its topology on every accepted admission).

Handlers are coroutines: Kopf would run synchronous ones in a thread pool, where reading the
memory races the event loop that changes it. Kopf serves them at ``/<handler id>`` and, when
``webhook_configuration`` is set, creates the webhook configurations and keeps their URL and CA
bundle current; a replica that stops cleanly removes its webhooks again (Kopf's non-persistent
webhooks), one that crashes leaves them to the failure policy.

Every request is counted per webhook by its answer (``allowed``, ``denied`` when a rule refuses
it, ``error`` when the operator is not ready or the handler failed), and every pod the
validate-pod webhook refuses counts as ``denied`` for its quota.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec

import kopf

from elasticquota.controller.certs import self_signed_certificate
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.names import ALLOWED, ERROR
from elasticquota.controller.metrics.names import DENIED as DENIED_RESULT
from elasticquota.controller.state import ControllerState, ObjectKey, QuotaObject
from elasticquota.core.affinity import affinity_with_profile
from elasticquota.core.gating import gates_with_admission
from elasticquota.core.models import ProfileSpec
from elasticquota.core.mutation import quota_defaults
from elasticquota.core.profiles import profile_tree_id
from elasticquota.core.validation import (
    ClusterView,
    QuotaCatalog,
    Violation,
    object_name,
    pod_quota,
    validate_pod,
    validate_quota_create,
    validate_quota_delete,
    validate_quota_update,
)
from elasticquota.kube.quotas import QUOTAS
from elasticquota.settings import Settings

logger = logging.getLogger(__name__)

PODS = ("", "v1", "pods")
P = ParamSpec("P")

VALIDATE_QUOTA = "validate-elasticquota"
MUTATE_QUOTA = "mutate-elasticquota"
MUTATE_POD = "mutate-pod"
VALIDATE_POD = "validate-pod"
#: The request breaks a rule.
DENIED = 403
#: The operator's memory is not complete yet (initial listing in progress).
NOT_READY = 503
#: How long an admitted object stands in for what the watch has not delivered yet.
RECENT_TTL = 30.0
#: Quotas indexed between two yields when the catalog is built ahead of the first request.
CATALOG_SLICE = 500


# -- the view of the cluster ---------------------------------------------------------------------


def quota_body(quota: QuotaObject) -> dict[str, Any]:
    """A quota of the memory as the raw object the rules read (no copies of the maps)."""
    return {
        "metadata": {
            "name": quota.name,
            "namespace": quota.namespace,
            "labels": quota.labels,
            "annotations": quota.annotations,
        },
        "spec": quota.spec,
        "status": quota.status,
    }


@dataclass(slots=True)
class _Admitted:
    body: Mapping[str, Any] | None  # None: deleted
    #: What the memory held for this key when it was admitted: once that changes, the watch has
    #: caught up and the memory is the truth again.
    seen: QuotaObject | None
    deadline: float


class RecentAdmissions:
    """Quotas admitted (created, updated, deleted) whose watch event has not arrived yet."""

    def __init__(self, ttl: float = RECENT_TTL, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[ObjectKey, _Admitted] = {}

    def remember(
        self, state: ControllerState, key: ObjectKey, body: Mapping[str, Any] | None
    ) -> None:
        self._entries[key] = _Admitted(body, state.quotas.get(key), self._clock() + self._ttl)

    def overlay(self, state: ControllerState) -> dict[ObjectKey, Mapping[str, Any] | None]:
        """The admissions still ahead of the memory (stale ones are forgotten here)."""
        now = self._clock()
        for key, entry in list(self._entries.items()):
            if now > entry.deadline or state.quotas.get(key) is not entry.seen:
                del self._entries[key]
        return {key: entry.body for key, entry in self._entries.items()}

    def __len__(self) -> int:
        return len(self._entries)


class QuotaMirror:
    """A ``QuotaCatalog`` that follows the memory (and the recent admissions) incrementally.

    On each request only the quotas the memory changed since the last request
    (``ControllerState.quota_changes_since``) and those an admission stands in for, now or at the
    last request, are looked at; of those, the objects not already held (compared by identity: the
    memory replaces a quota's object on every event) are re-indexed. A request costs what changed,
    not a pass over 10,000 quotas.
    """

    def __init__(self, state: ControllerState, recent: RecentAdmissions) -> None:
        self._state = state
        self._recent = recent
        self.catalog = QuotaCatalog()
        self._held: dict[ObjectKey, object] = {}
        self._sequence = 0
        self._overlaid: set[ObjectKey] = set()

    def refresh(self) -> QuotaCatalog:
        overlay = self._recent.overlay(self._state)
        changed = self._state.quota_changes_since(self._sequence)
        self._sequence = self._state.quota_sequence
        for key in {*changed, *overlay, *self._overlaid}:
            source = overlay[key] if key in overlay else self._state.quotas.get(key)
            self._hold(key, source)
        self._overlaid = set(overlay)
        return self.catalog

    async def follow(self, size: int = CATALOG_SLICE) -> None:
        """Index what the memory changed since the last request now, ``size`` quotas between
        yields to the event loop (the admissions in flight are applied by the next request)."""
        changed = self._state.quota_changes_since(self._sequence)
        self._sequence = self._state.quota_sequence
        for start in range(0, len(changed), size):
            for key in changed[start : start + size]:
                self._hold(key, self._state.quotas.get(key))
            await asyncio.sleep(0)

    def _hold(self, key: ObjectKey, source: QuotaObject | Mapping[str, Any] | None) -> None:
        if source is None:
            if self._held.pop(key, None) is not None:
                self.catalog.remove(key)
        elif self._held.get(key) is not source:
            body = quota_body(source) if isinstance(source, QuotaObject) else source
            self.catalog.upsert(body)
            self._held[key] = source


def cluster_view(mirror: QuotaMirror, state: ControllerState) -> ClusterView:
    """The quotas and pods as the operator knows them, recent admissions included."""
    return ClusterView(mirror.refresh(), state.engine.pods.values(), state.engine.name_owner)


# -- the handlers' logic ---------------------------------------------------------------------------


def _key(body: Mapping[str, Any]) -> ObjectKey:
    metadata = body.get("metadata") or {}
    return str(metadata.get("namespace") or ""), object_name(body)


def deny(violations: list[Violation], what: str = "") -> None:
    """Raise the admission error carrying every violation, if there is any (and log it)."""
    if violations:
        message = "; ".join(violation.message for violation in violations)
        if what:
            logger.info("refused %s: %s", what, message)
        raise kopf.AdmissionError(message, code=DENIED)


class Admission:
    """The three webhooks' decisions, over one operator's memory."""

    def __init__(
        self, state: ControllerState, settings: Settings, metrics: Metrics | None = None
    ) -> None:
        self.state = state
        self.metrics = metrics or Metrics()
        self.fail_closed = settings.webhook_failure_policy == "Fail"
        self.ignore_namespaces = frozenset(settings.ignore_namespaces)
        self.gating = settings.gating
        self.gating_exclude = frozenset(settings.gating_exclude_namespaces) | self.ignore_namespaces
        self.recent = RecentAdmissions()
        self.quotas = QuotaMirror(state, self.recent)

    def view(self) -> ClusterView:
        return cluster_view(self.quotas, self.state)

    def ready(self) -> bool:
        """Whether to judge now. Before the initial listing is in memory the operator cannot
        tell; it refuses (failure policy Fail: nothing unchecked gets in) or lets the request
        through (Ignore), as the API server would do if the webhook were unreachable."""
        if self.state.synced.is_set():
            return True
        if self.fail_closed:
            raise kopf.AdmissionError(
                "the elastic quota operator is still loading the cluster's quotas and pods; "
                "retry in a few seconds",
                code=NOT_READY,
            )
        return False

    def validate_quota(
        self,
        operation: str | None,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        dryrun: bool = False,
    ) -> None:
        if not self.ready():
            return
        view = self.view()
        if operation == "CREATE":
            violations = validate_quota_create(body, view)
        elif operation == "UPDATE":
            violations = validate_quota_update(old or {}, body, view)
        elif operation == "DELETE":
            violations = validate_quota_delete(old or body, view)
        else:
            return
        namespace, name = _key(body)
        deny(violations, f"{operation} ElasticQuota {namespace}/{name}")
        if not dryrun:
            remembered = None if operation == "DELETE" else dict(body)
            self.recent.remember(self.state, _key(body), remembered)

    def mutate_quota(self, body: Mapping[str, Any], patch: kopf.Patch) -> None:
        if not self.ready():
            return
        defaults = quota_defaults(body, self.view())
        deny(defaults.violations)
        for key, value in defaults.labels.items():
            patch.metadata.labels[key] = value
        for key, value in defaults.annotations.items():
            patch.metadata.annotations[key] = value

    def mutate_pod(self, body: Mapping[str, Any], patch: kopf.Patch) -> None:
        """New pods: the profile's node affinity (§4.8) and the admission gate (1.27+ servers)."""
        if not self.state.synced.is_set():
            return  # fail open: the pod is still accounted, and limited by revocation
        quota = pod_quota(body, self.view())
        profile = self._profile_of(quota)
        if profile is not None:
            patch.spec["affinity"] = affinity_with_profile(body, profile)
        if self.gating and self.state.gates_supported:
            gates = gates_with_admission(body, quota, self.gating_exclude)
            if gates is not None:
                patch.spec["schedulingGates"] = gates

    def _profile_of(self, quota: str) -> ProfileSpec | None:
        """The profile whose tree the quota belongs to (the first by namespace/name), if any."""
        tree = self.state.engine.tree_of(quota)
        if not tree:
            return None
        for key in sorted(self.state.profiles):
            if profile_tree_id(self.state.profiles[key]) == tree:
                return self.state.profiles[key]
        return None

    def validate_pod(
        self, operation: str | None, body: Mapping[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        namespace, name = _key(body)
        if namespace in self.ignore_namespaces or not self.ready():
            return
        view = self.view()
        violations = validate_pod(body, old if operation == "UPDATE" else None, view)
        if violations:
            self.metrics.denied(pod_quota(body, view))
        deny(violations, f"{operation} Pod {namespace}/{name}")

    def answer(
        self,
        webhook: str,
        subresource: str | None,
        judge: Callable[P, None],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> None:
        """Judge a request about the object itself (subresources pass), counting the answer."""
        try:
            if subresource is None:
                judge(*args, **kwargs)
        except kopf.AdmissionError as error:
            refused = DENIED_RESULT if error.code == DENIED else ERROR
            self.metrics.webhook_request(webhook, refused)
            raise
        except Exception:
            self.metrics.webhook_request(webhook, ERROR)
            raise
        self.metrics.webhook_request(webhook, ALLOWED)


# -- registration and the server ------------------------------------------------------------


def register_webhooks(
    registry: kopf.OperatorRegistry,
    state: ControllerState,
    settings: Settings,
    metrics: Metrics | None = None,
) -> Admission:
    """Register the admission handlers into ``registry`` (the server: ``configure_admission``)."""
    admission = Admission(state, settings, metrics)
    ignore = settings.webhook_failure_policy == "Ignore"
    quota_operations: Collection[Any] = ("CREATE", "UPDATE", "DELETE")

    @kopf.on.validate(
        *QUOTAS,
        id=VALIDATE_QUOTA,
        operations=quota_operations,
        ignore_failures=ignore,
        registry=registry,
    )
    async def validate_quota(
        body: kopf.Body,
        dryrun: bool,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        **_: Any,
    ) -> None:
        admission.answer(
            VALIDATE_QUOTA, subresource, admission.validate_quota, operation, body, old, dryrun
        )

    @kopf.on.mutate(
        *QUOTAS, id=MUTATE_QUOTA, operations=["CREATE"], ignore_failures=ignore, registry=registry
    )
    async def mutate_quota(
        body: kopf.Body, patch: kopf.Patch, subresource: str | None, **_: Any
    ) -> None:
        admission.answer(MUTATE_QUOTA, subresource, admission.mutate_quota, body, patch)

    @kopf.on.mutate(
        *PODS, id=MUTATE_POD, operations=["CREATE"], ignore_failures=True, registry=registry
    )
    async def mutate_pod(
        body: kopf.Body, patch: kopf.Patch, subresource: str | None, **_: Any
    ) -> None:
        admission.answer(MUTATE_POD, subresource, admission.mutate_pod, body, patch)

    @kopf.on.validate(
        *PODS,
        id=VALIDATE_POD,
        operations=["CREATE", "UPDATE"],
        ignore_failures=ignore,
        registry=registry,
    )
    async def validate_pod(
        body: kopf.Body,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        **_: Any,
    ) -> None:
        admission.answer(VALIDATE_POD, subresource, admission.validate_pod, operation, body, old)

    return admission


class WebhookServer(kopf.WebhookServer):
    """Kopf's HTTPS server, making its self-signed certificate with ``cryptography``."""

    @staticmethod
    def build_certificate(
        hostnames: Collection[str], password: str | None = None
    ) -> tuple[bytes, bytes]:
        return self_signed_certificate(hostnames, password)


def webhook_server(settings: Settings) -> kopf.WebhookServer:
    """The webhook server the settings describe: a provided certificate, else a self-signed one
    for the advertised host and the listen address."""
    return WebhookServer(
        addr=settings.webhook_address,
        port=settings.webhook_port,
        host=settings.webhook_host,
        certfile=settings.webhook_cert_file,
        pkeyfile=settings.webhook_key_file,
        cafile=settings.webhook_ca_file,
    )


def configure_admission(tuned: kopf.OperatorSettings, settings: Settings) -> None:
    """Serve the webhooks, and manage their configurations unless someone else does."""
    tuned.admission.server = webhook_server(settings)
    tuned.admission.managed = settings.webhook_configuration or None
