"""Prometheus metrics of the operator, served at ``/metrics`` next to the probes.

The registry is made by the runner (``Metrics()``), never the process-wide default, and nothing is
registered at import. Names are constants of ``names`` (``METRIC_NAMES`` holds every family, as
exposed: counters with ``_total``, histograms by their base name). Families and labels:

* per quota and resource, from the latest solved results at scrape time (``collectors``; active
  replica only): ``elastic_quota_min``, ``_max``, ``_runtime``, ``_request``, ``_used``,
  ``_effective_min``, ``_limited_request`` ``{tree, quota, namespace, parent, resource, unit}``;
  cpu in cores, memory (and other byte resources) in bytes, anything else in its plain unit, as
  the ``unit`` label says (``cores``, ``bytes``, ``units``: one family holds every resource, so
  the unit cannot be a suffix of its name). ``elastic_quota_tree_info{tree, tree_name}`` (1) names
  each tree shown: its profile, ``default`` for the default tree. An unset
  figure (e.g. no ``max`` for the resource: unlimited) has no series; so has a value at the
  operator's own "no limit" sentinels. The default tree is ``tree=""``.
* per user (group) and quota, from the user limits' frozen view at scrape time (``users``; active
  replica only): ``elastic_quota_user_used{tree, quota, user, resource, unit}``,
  ``elastic_quota_user_applications{tree, quota, user}``, the limit in force
  ``elastic_quota_user_limit{tree, quota, user, resource, unit}`` and
  ``elastic_quota_user_max_applications{tree, quota, user}``, the ``_group_`` twins with a
  ``group`` label; at most ``USER_METRICS_MAX_PER_QUOTA`` users (groups) per quota, the rest
  summed under ``(other)``, counted by ``elastic_quota_user_subjects_folded{kind}``.
* ``elastic_quota_gated_pods{quota, reason}``: pods the admission gate holds back (last gating
  round), by reason: ``quota``, ``user-limit``, ``group-limit``.
* ``elastic_quota_evictions_total{quota, reason, result}``: reason ``over-use`` (revocation) or
  ``preemption`` (in-quota preemption); result ``evicted``, ``blocked`` (a PodDisruptionBudget's
  429), ``gone`` (404: already deleted), ``failed`` (any other error).
* ``elastic_quota_admissions_total{quota, result}``: ``admitted`` (a gated pod released by the
  gate controller), ``denied`` (a pod refused by the validate-pod webhook; not a dry run, which
  creates no pod).
* ``elastic_quota_api_errors_total{verb, code}``: failed requests of the operator's API client,
  each attempt; verb ``get``/``list``/``create``/``update``/``patch``/``delete``/``evict``, code
  the HTTP status, ``timeout`` (``API_TIMEOUT``, 10 s by default), ``connection`` or ``fenced``
  (a write cut off when the Lease was not renewed in time); expected refusals count too (a 404 on
  an eviction of a pod already gone, a PodDisruptionBudget's 429). Kopf's watches are not seen.
* ``elastic_quota_webhook_requests_total{webhook, result}``: per handler id
  (``validate-elasticquota``, ``mutate-elasticquota``, ``validate-pod``, ``mutate-pod``),
  ``allowed``, ``denied`` (a rule refused it) or ``error`` (refused because the memory is not
  loaded yet under failure policy Fail, or the handler failed). Requests on subresources that
  reach a handler pass unjudged and count as ``allowed``.
* ``elastic_quota_leader``, ``elastic_quota_ready``, ``elastic_quota_invalid_quotas`` (quotas left
  out of their tree because they are broken), ``elastic_quota_info{version}`` (1).
* histograms ``elastic_quota_solve_seconds{tree}`` (a tree's engine solve, when it was out of
  date, whoever asked for it: tree loop, revocation, gating),
  ``elastic_quota_reconcile_seconds`` (one tree pass: solve, diff, writes) and
  ``elastic_quota_pod_event_to_write_seconds`` (from the first pod event that made a tree out of
  date to the end of the writes that show it; passes that had nothing to write are not timed),
  ``elastic_quota_admission_wait_seconds{tree, quota}`` (a released pod's wait at the admission
  gate, from its creationTimestamp: the gate comes with the pod).
"""

from elasticquota.controller.metrics.names import METRIC_NAMES
from elasticquota.controller.metrics.recorder import Metrics

__all__ = ["METRIC_NAMES", "Metrics"]
