"""The webhooks' decisions over the operator's memory: the handlers only parse, call the pure
rules of ``elasticquota.core.validation`` / ``core.decisions.mutation`` and turn violations into
``kopf.AdmissionError`` (HTTP 403, every violation's message joined by ``; ``).

Every request is counted per webhook by its answer (``allowed``, ``denied`` when a rule refuses
it, ``error`` when the operator is not ready or the handler failed), dry runs included: each is a
request answered. Every pod the validate-pod webhook refuses counts as ``denied`` for its quota
(``elastic_quota_admissions_total``), except in a dry run (``kubectl apply --dry-run=server``):
no pod is created, so none is refused, and a CI job's dry runs do not read as pods turned away.

A refusal is normal operation: it is logged once, at INFO, on one line with the request, the object
and each broken rule (``refused CREATE ElasticQuota team/q: ... [min-le-max]``); a request refused
because the memory is still loading, at WARNING. The server calls the handlers itself
(``direct``), so Kopf never echoes a refusal at ERROR; a handler that fails is logged there at
ERROR, with its traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec

import kopf

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.names import ALLOWED, ERROR
from elasticquota.controller.metrics.names import DENIED as DENIED_RESULT
from elasticquota.controller.quotalog import ObjectKey
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks.identity import stamp_request, trust_rules
from elasticquota.controller.webhooks.memory import QuotaMirror, RecentAdmissions, cluster_view
from elasticquota.controller.webhooks.namespaces import pod_webhook_excluded_namespaces
from elasticquota.controller.webhooks.userlimit_admission import UserLimitAdmission
from elasticquota.core.decisions.affinity import affinity_with_profile
from elasticquota.core.decisions.gating import gates_with_admission
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.model.models import ProfileSpec
from elasticquota.core.tree.profiles import profile_tree_id
from elasticquota.core.validation import (
    ClusterView,
    Violation,
    object_name,
    pod_quota,
    validate_pod,
    validate_quota_create,
    validate_quota_delete,
    validate_quota_update,
)
from elasticquota.settings import Settings

#: The package's logger: every admission log line under one name.
logger = logging.getLogger("elasticquota.controller.webhooks")

P = ParamSpec("P")

VALIDATE_QUOTA = "validate-elasticquota"
MUTATE_QUOTA = "mutate-elasticquota"
MUTATE_POD = "mutate-pod"
VALIDATE_POD = "validate-pod"
#: The request breaks a rule.
DENIED = 403
#: The operator's memory is not complete yet (initial listing in progress).
NOT_READY = 503


Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(frozen=True, slots=True)
class Registration:
    """One admission handler as ``register_webhooks`` gave it to Kopf."""

    id: str
    mutating: bool
    operations: tuple[Operation, ...]
    ignore_failures: bool
    fn: Callable[..., Awaitable[None]]


def object_key(body: Mapping[str, Any]) -> ObjectKey:
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

    def ready(self, what: str, fail_closed: bool | None = None) -> bool:
        """Whether to judge now. Before the initial listing is in memory the operator cannot
        tell; it refuses (failure policy Fail: nothing unchecked gets in) or lets the request
        through (Ignore), as the API server would do if the webhook were unreachable.
        ``what``: the request and its object, named in the log when refused; ``fail_closed``: the
        webhook's policy (default: the quota webhooks')."""
        if self.state.synced.is_set():
            return True
        if self.fail_closed if fail_closed is None else fail_closed:
            logger.warning("refused %s: the initial listing is not in memory yet", what)
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
        namespace, name = object_key(body)
        if not self.ready(f"{operation} ElasticQuota {namespace}/{name}"):
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
        deny(violations, f"{operation} ElasticQuota {namespace}/{name}")
        if not dryrun:
            remembered = None if operation == "DELETE" else dict(body)
            self.recent.remember(self.state, object_key(body), remembered)

    def mutate_quota(self, body: Mapping[str, Any], patch: kopf.Patch) -> None:
        namespace, name = object_key(body)
        what = f"CREATE ElasticQuota {namespace}/{name} (defaults)"
        if not self.ready(what):
            return
        defaults = quota_defaults(body, self.view())
        deny(defaults.violations, what)
        for key, value in defaults.labels.items():
            patch.metadata.labels[key] = value
        for key, value in defaults.annotations.items():
            patch.metadata.annotations[key] = value

    def mutate_pod(
        self,
        body: Mapping[str, Any],
        patch: kopf.Patch,
        userinfo: Mapping[str, Any] | None = None,
        operation: str | None = "CREATE",
        old: Mapping[str, Any] | None = None,
    ) -> None:
        """New pods: who they run for (``controller.webhooks.identity``, from the first request on),
        the profile's node affinity and the admission gate (1.27+ servers). Updated pods: an
        identity changed by an untrusted requester is put back (nothing else is decided)."""
        stamp_request("Pod", operation, body, old, userinfo, self.trust, patch)
        if operation == "UPDATE" or not self.state.synced.is_set():
            return  # fail open: the pod is still accounted, and limited by revocation
        if object_key(body)[0] in self.unjudged_pod_namespaces:
            return
        quota = pod_quota(body, self.view())
        profile = self._profile_of(quota)
        affinity = None if profile is None else affinity_with_profile(body, profile)
        if affinity is not None:
            patch.spec["affinity"] = affinity
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
        namespace, name = object_key(body)
        what = f"{operation} Pod {namespace}/{name}"
        if namespace in self.unjudged_pod_namespaces or not self.ready(what, self.pods_fail_closed):
            return
        view = self.view()
        violations = validate_pod(body, old if operation == "UPDATE" else None, view)
        violations = violations or self.user_limits.violations(
            operation, body, pod_quota(body, view), remember=not dryrun
        )
        if violations and not dryrun:  # a dry run creates no pod: no pod refused either
            self.metrics.denied(pod_quota(body, view))
        deny(violations, what)

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
