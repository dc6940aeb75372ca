"""Every metric family name, label and label value in one place.

Dashboards, alert rules and the docs are written against these names (and tested against
``METRIC_NAMES``), so they live here as constants, never as literals at the call sites.
"""

from __future__ import annotations

from typing import Final

# -- per quota and resource, read from the latest solved results at scrape time ------------------

QUOTA_MIN: Final = "elastic_quota_min"
QUOTA_MAX: Final = "elastic_quota_max"
QUOTA_RUNTIME: Final = "elastic_quota_runtime"
QUOTA_REQUEST: Final = "elastic_quota_request"
QUOTA_USED: Final = "elastic_quota_used"
QUOTA_EFFECTIVE_MIN: Final = "elastic_quota_effective_min"
QUOTA_LIMITED_REQUEST: Final = "elastic_quota_limited_request"
QUOTA_LENDING_LIMIT: Final = "elastic_quota_lending_limit"
QUOTA_BORROWING_LIMIT: Final = "elastic_quota_borrowing_limit"

#: Each per-quota gauge, the ``QuotaResult`` field it shows (None: no series), and its help text.
QUOTA_FIGURES: Final = {
    QUOTA_MIN: ("min", "Guaranteed amount (spec.min)"),
    QUOTA_MAX: ("max", "Upper limit (spec.max)"),
    QUOTA_RUNTIME: ("runtime", "Share the quota may use now"),
    QUOTA_REQUEST: ("request", "What its pods and its children ask for"),
    QUOTA_USED: ("used", "What its running pods hold"),
    QUOTA_EFFECTIVE_MIN: ("effective_min", "Guaranteed amount after scaling to the tree total"),
    QUOTA_LIMITED_REQUEST: ("limited_request", "Request capped at max (what the parent sees)"),
    QUOTA_LENDING_LIMIT: (
        "lending_limit",
        "Most of its unused min lent outside its subtree (lending-limit annotation)",
    ),
    QUOTA_BORROWING_LIMIT: (
        "borrowing_limit",
        "Most its subtree may use beyond its min (borrowing-limit annotation)",
    ),
}
QUOTA_LABELS: Final = ("tree", "quota", "namespace", "parent", "resource", "unit")

#: ``unit`` label of every family with a ``resource`` label: the unit of its values, which depends
#: on the resource (one family holds cpu and memory), so it cannot be a suffix of the name as
#: Prometheus' naming asks for single-unit families. ``resource_unit`` says which.
UNIT_CORES: Final = "cores"
UNIT_BYTES: Final = "bytes"
#: The resource's own unit: a count for ``pods`` or ``nvidia.com/gpu``, as the resource is named.
UNIT_PLAIN: Final = "units"
#: Resources measured in bytes (besides ``hugepages-*``).
BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage", "storage"})


def resource_unit(resource: str) -> str:
    """The ``unit`` label of a resource's values: cores, bytes, or the resource's own units."""
    if resource == "cpu":
        return UNIT_CORES
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-"):
        return UNIT_BYTES
    return UNIT_PLAIN


# -- per over-used quota, from the revocation loop's timers at scrape time -----------------------

#: When the quota's current over-use began (epoch seconds): the start of its revocation timer.
OVER_USED_SINCE: Final = "elastic_quota_over_used_since_timestamp_seconds"
#: The minimum runtime of the over-used quota's pods (its annotation, an ancestor's, the setting).
REVOCATION_MIN_RUNTIME: Final = "elastic_quota_revocation_min_runtime_seconds"
OVER_USE_LABELS: Final = ("tree", "quota", "namespace", "parent")

# -- per user (group) and quota, read from the user limits' frozen view at scrape time ---------

USER_USED: Final = "elastic_quota_user_used"
USER_APPLICATIONS: Final = "elastic_quota_user_applications"
USER_LIMIT: Final = "elastic_quota_user_limit"
USER_MAX_APPLICATIONS: Final = "elastic_quota_user_max_applications"
GROUP_USED: Final = "elastic_quota_group_used"
GROUP_APPLICATIONS: Final = "elastic_quota_group_applications"
GROUP_LIMIT: Final = "elastic_quota_group_limit"
GROUP_MAX_APPLICATIONS: Final = "elastic_quota_group_max_applications"
#: Users (groups) per quota folded into ``(other)`` by the cardinality guard, at this scrape.
USER_SUBJECTS_FOLDED: Final = "elastic_quota_user_subjects_folded"
#: The four families of each kind of subject: used, applications, limit, max applications.
SUBJECT_FAMILIES: Final = {
    "user": (USER_USED, USER_APPLICATIONS, USER_LIMIT, USER_MAX_APPLICATIONS),
    "group": (GROUP_USED, GROUP_APPLICATIONS, GROUP_LIMIT, GROUP_MAX_APPLICATIONS),
}

# -- the operator's state, read at scrape time ---------------------------------------------------

GATED_PODS: Final = "elastic_quota_gated_pods"
LEADER: Final = "elastic_quota_leader"
READY: Final = "elastic_quota_ready"
INVALID_QUOTAS: Final = "elastic_quota_invalid_quotas"
INFO: Final = "elastic_quota_info"
#: One series per tree (1): the tree id of the other families' ``tree`` label and its name (the
#: profile's, ``default`` for the default tree), to join on: ``* on (tree) group_left (tree_name)``.
TREE_INFO: Final = "elastic_quota_tree_info"
DEFAULT_TREE_NAME: Final = "default"

# -- counters (exposed names, with the _total suffix) --------------------------------------------

EVICTIONS: Final = "elastic_quota_evictions_total"
ADMISSIONS: Final = "elastic_quota_admissions_total"
API_ERRORS: Final = "elastic_quota_api_errors_total"
WEBHOOK_REQUESTS: Final = "elastic_quota_webhook_requests_total"
LEASE_RENEW_FAILURES: Final = "elastic_quota_lease_renew_failures_total"

# -- histograms (base names: Prometheus adds _bucket, _sum and _count) ---------------------------

SOLVE_SECONDS: Final = "elastic_quota_solve_seconds"
RECONCILE_SECONDS: Final = "elastic_quota_reconcile_seconds"
POD_EVENT_TO_WRITE_SECONDS: Final = "elastic_quota_pod_event_to_write_seconds"
EVENT_LOOP_LAG_SECONDS: Final = "elastic_quota_event_loop_lag_seconds"
#: How long a released pod waited at the admission gate (its creation, when the mutating webhook
#: gave it the gate, to its release), by tree and quota.
ADMISSION_WAIT_SECONDS: Final = "elastic_quota_admission_wait_seconds"

# -- gauges fed by the operator's own probes -----------------------------------------------------

EVENT_LOOP_MAX_LAG: Final = "elastic_quota_event_loop_max_lag_seconds"

# -- the readers (one list-and-watch per kind), read at scrape time ------------------------------

WATCH_CONNECTED: Final = "elastic_quota_watch_connected"
WATCH_DOWN_SECONDS: Final = "elastic_quota_watch_down_seconds"
WATCH_RELISTS: Final = "elastic_quota_watch_relists_total"

#: Every family: gauges by name, counters with ``_total``, histograms by their base name.
METRIC_NAMES: Final = frozenset(
    {
        *QUOTA_FIGURES,
        OVER_USED_SINCE,
        REVOCATION_MIN_RUNTIME,
        *SUBJECT_FAMILIES["user"],
        *SUBJECT_FAMILIES["group"],
        USER_SUBJECTS_FOLDED,
        GATED_PODS,
        LEADER,
        READY,
        INVALID_QUOTAS,
        INFO,
        TREE_INFO,
        EVICTIONS,
        ADMISSIONS,
        API_ERRORS,
        WEBHOOK_REQUESTS,
        LEASE_RENEW_FAILURES,
        SOLVE_SECONDS,
        RECONCILE_SECONDS,
        POD_EVENT_TO_WRITE_SECONDS,
        EVENT_LOOP_LAG_SECONDS,
        ADMISSION_WAIT_SECONDS,
        EVENT_LOOP_MAX_LAG,
        WATCH_CONNECTED,
        WATCH_DOWN_SECONDS,
        WATCH_RELISTS,
    }
)

# -- label values --------------------------------------------------------------------------------

#: ``elastic_quota_evictions_total{result}``: the ``EvictionOutcome`` values, and "failed".
EVICTED: Final = "evicted"
BLOCKED: Final = "blocked"
GONE: Final = "gone"
FAILED: Final = "failed"
EVICTION_RESULTS: Final = (EVICTED, BLOCKED, GONE, FAILED)

#: ``elastic_quota_evictions_total{reason}``: what decided the eviction. ``over-use``: a revocation
#: round of a quota above its runtime for longer than the revocation delay
#: (``core.decisions.revocation``); ``preemption``: in-quota preemption for a gated pod of higher
#: priority (``core.decisions.preemption``). Non-preemptible pods are never evicted (neither chooses
#: them, as in the reference): a quota whose non-preemptible pods alone exceed its min has no
#: eviction to count.
OVER_USE: Final = "over-use"
PREEMPTION: Final = "preemption"
EVICTION_REASONS: Final = (OVER_USE, PREEMPTION)

#: ``elastic_quota_admissions_total{result}``.
ADMITTED: Final = "admitted"
DENIED: Final = "denied"
ADMISSION_RESULTS: Final = (ADMITTED, DENIED)

#: ``elastic_quota_gated_pods{reason}``: what holds the pods back.
HELD_BY_QUOTA: Final = "quota"
HELD_BY_USER_LIMIT: Final = "user-limit"
HELD_BY_GROUP_LIMIT: Final = "group-limit"
HELD_REASONS: Final = (HELD_BY_QUOTA, HELD_BY_USER_LIMIT, HELD_BY_GROUP_LIMIT)

#: ``elastic_quota_webhook_requests_total{result}``.
ALLOWED: Final = "allowed"
ERROR: Final = "error"
WEBHOOK_RESULTS: Final = (ALLOWED, DENIED, ERROR)

#: ``elastic_quota_lease_renew_failures_total{reason}``: the ``kube.lease`` renew failure reasons.
RENEW_ERROR: Final = "error"
RENEW_TIMEOUT: Final = "timeout"
RENEW_LOST: Final = "lost"
RENEW_FAILURE_REASONS: Final = (RENEW_ERROR, RENEW_TIMEOUT, RENEW_LOST)

# -- histogram buckets (seconds) -----------------------------------------------------------------

#: One tree's kernel solve: well under a millisecond for small trees, seconds for huge ones.
SOLVE_BUCKETS: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0,
)  # fmt: skip
#: How late the event loop ran a probe that asked to be woken: 0 on an idle loop; above 0.1 s
#: means something held the loop (event intake, webhooks and the Lease all wait meanwhile).
LOOP_LAG_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
#: One tree pass: the solve plus the diff plus the writes (API round trips).
RECONCILE_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
#: At the admission gate: seconds for a pod that fits at once, hours behind a busy quota.
ADMISSION_WAIT_BUCKETS: Final = (
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
)  # fmt: skip
#: From a pod event to the writes that show it: includes waiting out the reconcile interval.
POD_EVENT_BUCKETS: Final = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip
