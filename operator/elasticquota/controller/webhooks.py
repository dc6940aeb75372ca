"""Admission webhooks: Kopf validating / mutating handlers over the operator's memory, and their
HTTPS server.

Three webhooks, as the reference's: ``validate-elasticquota`` (CREATE, UPDATE, DELETE),
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

Failure policies: the quota webhooks follow ``webhook_failure_policy`` (Fail by default: no quota
write goes unchecked), the pod webhooks ``pod_webhook_failure_policy`` (Ignore by default: an
operator that is down, starting or unreachable must not stop the cluster's pods; what gets in
unchecked is still accounted and limited by revocation). The pod webhooks never see ``kube-system``,
the operator's own namespace nor the ignored ones: Kopf's configurations get a ``namespaceSelector``
on the ``kubernetes.io/metadata.name`` label (``pod_namespace_selector``), which API servers set on
every namespace since 1.21 (on older ones a namespace without it is matched: label it yourself);
the handlers also let those namespaces' pods through at once.

Every request is counted per webhook by its answer (``allowed``, ``denied`` when a rule refuses
it, ``error`` when the operator is not ready or the handler failed), and every pod the
validate-pod webhook refuses counts as ``denied`` for its quota.

A refusal is normal operation: it is logged once, at INFO, on one line with the request, the object
and each broken rule (``refused CREATE ElasticQuota team/q: ... [min-le-max]``); a request refused
because the memory is still loading, at WARNING. Kopf would log every ``AdmissionError`` again at
ERROR ("Webhook ... failed permanently"): that echo of a refusal just logged is dropped
(``RefusalEcho``). A handler that fails is still logged by Kopf at ERROR, with its traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, ParamSpec

import kopf
from kopf._core.engines import admission as kopf_admission

from elasticquota.controller.certs import self_signed_certificate
from elasticquota.controller.identity import (
    WORKLOAD_RESOURCES,
    stamp_request,
    trust_rules,
    workload_handler,
    workload_webhooks,
)
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.names import ALLOWED, ERROR
from elasticquota.controller.metrics.names import DENIED as DENIED_RESULT
from elasticquota.controller.state import ControllerState, ObjectKey, QuotaObject
from elasticquota.controller.userlimit_admission import UserLimitAdmission
from elasticquota.core.affinity import affinity_with_profile
from elasticquota.core.gating import gates_with_admission
from elasticquota.core.models import ProfileSpec
from elasticquota.core.mutation import quota_defaults
from elasticquota.core.profiles import profile_tree_id
from elasticquota.core.timeslice import TimeSlice
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
#: Namespaces whose pods the pod webhooks never see: the cluster's own components must start
#: whatever the operator's state (besides the operator's own namespace and the ignored ones).
SYSTEM_NAMESPACES = ("kube-system",)
#: The label API servers put on every namespace since 1.21, its value the namespace's name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: The namespace of the pod the operator runs in (absent outside a cluster).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


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
        """Index what the memory changed since the last request now, oldest first, yielding to
        the event loop after ``size`` quotas or once a stretch has run for its time budget (the
        admissions in flight are applied by the next request). The mirror's place in the change
        log moves with each quota indexed, so a request (``refresh``) or another ``follow`` in
        the meantime takes on only what this one has not reached yet."""
        changes = self._state.quota_changes
        pending = [
            (key, changes[key]) for key in reversed(self._state.quota_changes_since(self._sequence))
        ]
        stretch = TimeSlice()
        for position, (key, sequence) in enumerate(pending, start=1):
            if sequence > self._sequence:
                self._hold(key, self._state.quotas.get(key))
                self._sequence = sequence
            if position % size == 0 or stretch.due():
                await asyncio.sleep(0)
                stretch.restart()
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


def one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def deny(violations: list[Violation], what: str) -> None:
    """Raise the admission error carrying every violation, if there is any, and log the refusal:
    INFO, one line, the request and object (``what``) and each message with its rule."""
    if violations:
        message = "; ".join(violation.message for violation in violations)
        rules = "; ".join(f"{violation.message} [{violation.rule}]" for violation in violations)
        logger.info("refused %s: %s", what, one_line(rules))
        raise kopf.AdmissionError(message, code=DENIED)


class RefusalEcho(logging.Filter):
    """Drops Kopf's ERROR echo of the refusal a handler has just raised (and logged itself).

    Kopf logs every ``AdmissionError`` as ``Webhook '<id>' failed permanently: <message>`` on
    ``kopf.objects``, right after the handler raised it, before any other task runs: the handler
    says which line to expect (``expect``), and only that line is dropped, once. Other lines of
    Kopf, a failing handler's traceback included, pass.
    """

    def __init__(self) -> None:
        super().__init__()
        self._expected: str | None = None

    def expect(self, webhook: str, error: kopf.AdmissionError) -> None:
        self._expected = f"Webhook {webhook!r} failed permanently: {str(error) or repr(error)}"

    def filter(self, record: logging.LogRecord) -> bool:
        if self._expected is not None and record.getMessage() == self._expected:
            self._expected = None
            return False
        return True


#: Kopf's logger of handler outcomes, and the one filter on it (installed with the webhooks).
KOPF_OBJECTS = logging.getLogger("kopf.objects")
REFUSAL_ECHO = RefusalEcho()


class Admission:
    """The three webhooks' decisions, over one operator's memory."""

    def __init__(
        self, state: ControllerState, settings: Settings, metrics: Metrics | None = None
    ) -> None:
        self.state = state
        self.metrics = metrics or Metrics()
        self.fail_closed = settings.webhook_failure_policy == "Fail"
        self.pods_fail_closed = settings.pod_webhook_failure_policy == "Fail"
        self.ignore_namespaces = frozenset(settings.ignore_namespaces)
        self.unjudged_pod_namespaces = frozenset(pod_webhook_excluded_namespaces(settings))
        self.gating = settings.gating
        self.gating_exclude = frozenset(settings.gating_exclude_namespaces) | self.ignore_namespaces
        self.recent = RecentAdmissions()
        self.quotas = QuotaMirror(state, self.recent)
        self.trust = trust_rules(settings)
        self.user_limits = UserLimitAdmission(state, settings.user_limits_refuse_pods)
        #: The handlers registered with Kopf for these decisions (``register_webhooks``).
        self.registered: list[Registration] = []

    def view(self) -> ClusterView:
        return cluster_view(self.quotas, self.state)

    def ready(self, fail_closed: bool | None = None) -> bool:
        """Whether to judge now. Before the initial listing is in memory the operator cannot
        tell; it refuses (failure policy Fail: nothing unchecked gets in) or lets the request
        through (Ignore), as the API server would do if the webhook were unreachable.
        ``fail_closed``: the webhook's policy (default: the quota webhooks')."""
        if self.state.synced.is_set():
            return True
        if self.fail_closed if fail_closed is None else fail_closed:
            logger.warning("refused a request: the initial listing is not in memory yet")
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
        namespace, name = _key(body)
        deny(defaults.violations, f"CREATE ElasticQuota {namespace}/{name} (defaults)")
        for key, value in defaults.labels.items():
            patch.metadata.labels[key] = value
        for key, value in defaults.annotations.items():
            patch.metadata.annotations[key] = value

    def mutate_pod(
        self,
        body: Mapping[str, Any],
        patch: kopf.Patch,
        userinfo: Mapping[str, Any] | None = None,
    ) -> None:
        """New pods: who they run for (``controller.identity``, from the first request on), the
        profile's node affinity and the admission gate (1.27+ servers)."""
        stamp_request("Pod", "CREATE", body, None, userinfo, self.trust, patch)
        if not self.state.synced.is_set():
            return  # fail open: the pod is still accounted, and limited by revocation
        if _key(body)[0] in self.unjudged_pod_namespaces:
            return
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
        self,
        operation: str | None,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        dryrun: bool = False,
    ) -> None:
        namespace, name = _key(body)
        if namespace in self.unjudged_pod_namespaces or not self.ready(self.pods_fail_closed):
            return
        view = self.view()
        violations = validate_pod(body, old if operation == "UPDATE" else None, view)
        violations = violations or self.user_limits.violations(
            operation, body, pod_quota(body, view), remember=not dryrun
        )
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
            REFUSAL_ECHO.expect(webhook, error)  # logged already: not again at ERROR by Kopf
            raise
        except Exception:
            self.metrics.webhook_request(webhook, ERROR)
            raise
        self.metrics.webhook_request(webhook, ALLOWED)


# -- registration and the server ------------------------------------------------------------


Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(frozen=True, slots=True)
class Registration:
    """One admission handler as ``register_webhooks`` gave it to Kopf."""

    id: str
    mutating: bool
    operations: tuple[Operation, ...]
    ignore_failures: bool
    fn: Callable[..., Awaitable[None]]


def register_webhooks(
    registry: kopf.OperatorRegistry,
    state: ControllerState,
    settings: Settings,
    metrics: Metrics | None = None,
) -> Admission:
    """Register the admission handlers into ``registry`` (the server: ``configure_admission``);
    what was registered is kept in ``Admission.registered``."""
    admission = Admission(state, settings, metrics)
    if REFUSAL_ECHO not in KOPF_OBJECTS.filters:
        KOPF_OBJECTS.addFilter(REFUSAL_ECHO)
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
        admission.registered.append(handler)

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
        **_: Any,
    ) -> None:
        await admission.quotas.follow()
        admission.answer(MUTATE_POD, subresource, admission.mutate_pod, body, patch, userinfo)

    async def validate_pod(
        body: kopf.Body,
        subresource: str | None,
        operation: str | None = None,
        old: kopf.Body | None = None,
        dryrun: bool = False,
        **_: Any,
    ) -> None:
        await admission.quotas.follow()
        admission.answer(
            VALIDATE_POD, subresource, admission.validate_pod, operation, body, old, dryrun
        )

    quota_operations: tuple[Operation, ...] = ("CREATE", "UPDATE", "DELETE")
    register(QUOTAS, Registration(VALIDATE_QUOTA, False, quota_operations, ignore, validate_quota))
    register(QUOTAS, Registration(MUTATE_QUOTA, True, ("CREATE",), ignore, mutate_quota))
    register(PODS, Registration(MUTATE_POD, True, ("CREATE",), ignore_for_pods, mutate_pod))
    pod_operations: tuple[Operation, ...] = ("CREATE", "UPDATE")
    register(PODS, Registration(VALIDATE_POD, False, pod_operations, ignore_for_pods, validate_pod))
    for selector, webhook, kind in workload_webhooks():
        handler = workload_handler(admission, webhook, kind)
        register(
            selector, Registration(webhook, True, ("CREATE", "UPDATE"), ignore_for_pods, handler)
        )
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
    """Serve the webhooks, and manage their configurations unless someone else does (then with
    the pod webhooks' namespaceSelector)."""
    tuned.admission.server = webhook_server(settings)
    tuned.admission.managed = settings.webhook_configuration or None
    if settings.webhook_configuration:
        _POD_EXCLUSIONS[settings.webhook_configuration] = pod_webhook_excluded_namespaces(settings)
        kopf_admission.build_webhooks = build_webhooks_excluding_namespaces


# -- the namespaces the pod webhooks never see ----------------------------------------------------


def in_cluster_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str | None:
    """The namespace of the operator's pod, from its service account; None outside a cluster."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def pod_webhook_excluded_namespaces(
    settings: Settings, own_namespace: str | None = None
) -> tuple[str, ...]:
    """``kube-system``, the operator's own namespace (the Lease's, and its pod's when in a
    cluster: ``own_namespace``, read from the service account by default) and the ignored ones."""
    own = own_namespace if own_namespace is not None else in_cluster_namespace()
    names = {*SYSTEM_NAMESPACES, settings.effective_lease_namespace, *settings.ignore_namespaces}
    if own:
        names.add(own)
    return tuple(sorted(names))


def pod_namespace_selector(excluded: Iterable[str]) -> dict[str, Any]:
    """The pod webhooks' ``namespaceSelector``: every namespace but ``excluded``, by name label.

    API servers label every namespace with its name since 1.21; a namespace without the label
    (older servers) is matched, so the exclusion then needs the label set by hand."""
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": sorted(excluded)}
        ]
    }


def matches_pods(webhook: Mapping[str, Any]) -> bool:
    """Whether a webhook of a configuration is called for pods (or a subresource of pods), or
    for the workloads that make them (``controller.identity``)."""
    kinds = {("", "pods"), *WORKLOAD_RESOURCES}
    return any(
        (group, str(resource).split("/")[0]) in kinds
        for rule in webhook.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
    )


#: Kopf's own builder of the managed configurations' webhooks.
_KOPF_BUILD_WEBHOOKS = kopf_admission.build_webhooks
#: The pod webhooks' excluded namespaces, by managed configuration (Kopf's name suffix).
_POD_EXCLUSIONS: dict[str, tuple[str, ...]] = {}


def build_webhooks_excluding_namespaces(
    handlers_: Iterable[Any],
    *,
    resources: Iterable[Any],
    name_suffix: str,
    client_config: Any,
    persistent_only: bool = False,
) -> list[dict[str, Any]]:
    """Kopf's webhooks of a managed configuration, each pod webhook with the namespaceSelector.

    Kopf builds the configurations it manages with ``build_webhooks`` (every time the URL or CA
    bundle changes) and has no option for a namespaceSelector, so this replaces that function in
    Kopf's admission engine (``configure_admission``); tests/integration/test_admission_webhooks.py
    reads the selector back from the API server, so a Kopf that stopped calling it is noticed."""
    webhooks = _KOPF_BUILD_WEBHOOKS(
        handlers_,
        resources=resources,
        name_suffix=name_suffix,
        client_config=client_config,
        persistent_only=persistent_only,
    )
    excluded = _POD_EXCLUSIONS.get(name_suffix)
    if excluded:
        for webhook in webhooks:
            if matches_pods(webhook):
                webhook["namespaceSelector"] = pod_namespace_selector(excluded)
    return webhooks
