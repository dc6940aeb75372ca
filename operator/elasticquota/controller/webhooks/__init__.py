"""Admission webhooks: Kopf validating / mutating handlers over the operator's memory, and their
HTTPS server.

Three webhooks, as the reference's: ``validate-elasticquota`` (CREATE, UPDATE, DELETE),
``mutate-elasticquota`` (CREATE) and ``validate-pod`` (CREATE, UPDATE), plus ``mutate-pod`` and the
workload webhooks of user limits (``identity``). By duty, from the top (import contract
"Webhooks"):

- ``registration``: the handlers registered with Kopf, one table of ``Registration``;
  ``server``: the HTTPS server and the configurations Kopf manages; ``certrotation``: the
  server's certificate when the operator keeps it in a Secret, and the caBundle it patches;
- ``admission``: the decisions (``Admission``), refusals and their log lines; ``identity``: who
  a new pod or workload runs for (the two call each other: the stamp is an admission's answer);
- ``memory``: what the rules read, a ``ClusterView`` of the memory the watch keeps current plus what
  was admitted a moment ago and not yet seen by the watch (``RecentAdmissions``);
  ``userlimit_admission``: user and group limits refused at CREATE where the API server has no
  gates; ``namespaces``: the namespaces the pod webhooks never see; ``certs``: a self-signed
  serving certificate made in memory; ``tlsfiles``: certificate files read again when they
  change, served from the next handshake on without closing the port.

Failure policies: the quota webhooks follow ``webhook_failure_policy`` (Fail by default: no quota
write goes unchecked), the pod webhooks ``pod_webhook_failure_policy`` (Ignore by default: an
operator that is down, starting or unreachable must not stop the cluster's pods; what gets in
unchecked is still accounted and limited by revocation).
"""

from elasticquota.controller.webhooks.admission import (
    DENIED,
    MUTATE_POD,
    MUTATE_QUOTA,
    NOT_READY,
    VALIDATE_POD,
    VALIDATE_QUOTA,
    Admission,
    Registration,
    deny,
)
from elasticquota.controller.webhooks.memory import QuotaMirror, RecentAdmissions, cluster_view
from elasticquota.controller.webhooks.namespaces import (
    in_cluster_namespace,
    pod_webhook_excluded_namespaces,
)
from elasticquota.controller.webhooks.registration import register_webhooks
from elasticquota.controller.webhooks.server import (
    WebhookServer,
    build_webhooks_excluding_namespaces,
    configure_admission,
    matches_pods,
    pod_namespace_selector,
    webhook_server,
)

__all__ = [
    "DENIED",
    "MUTATE_POD",
    "MUTATE_QUOTA",
    "NOT_READY",
    "VALIDATE_POD",
    "VALIDATE_QUOTA",
    "Admission",
    "QuotaMirror",
    "RecentAdmissions",
    "Registration",
    "WebhookServer",
    "build_webhooks_excluding_namespaces",
    "cluster_view",
    "configure_admission",
    "deny",
    "in_cluster_namespace",
    "matches_pods",
    "pod_namespace_selector",
    "pod_webhook_excluded_namespaces",
    "register_webhooks",
    "webhook_server",
]
