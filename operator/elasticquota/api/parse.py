"""Raw Kubernetes objects (dicts) to the engine's typed models, with a problem for every bad value.

Each ``parse_*`` returns the model (or None when the object cannot be used at all) and the problems
found. A broken value that has a safe reading (an unparsable ``shared-weight`` means "use max", as
in the reference) is reported and read that way; a broken value that has none (a bad quantity in min
or max, a negative min) leaves the object out. Keys of Koordinator are read first, the seed
document's older names (``parent-quota-name``, pod label ``quota-name``) as aliases. A quota is
read by the core's one reader of quotas (``core.model.quotaread``); what is decided here is the
engine's reading of what does not read (``parse_quota_object``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from sys import intern
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from elasticquota.api.fields import pod_identity, timestamp
from elasticquota.api.podfast import SHARED_REQUESTS, read_pod
from elasticquota.api.schema import (
    ContainerView,
    ElasticQuotaView,
    LabelSelectorView,
    NodeView,
    PodView,
    ProfileView,
)
from elasticquota.core import keys
from elasticquota.core.keys import first_label
from elasticquota.core.model.models import (
    LabelRequirement,
    LabelSelector,
    NodeInfo,
    PodInfo,
    Problem,
    ProfileSpec,
)
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import mapping_or_empty, read_quota, string_list
from elasticquota.core.quantities.podrequest import InitContainer, effective_request
from elasticquota.core.quantities.quantity import QuantityError, format_quantity, parse_quantity
from elasticquota.core.quantities.resources import (
    ResourceList,
    parse_resource_list,
)
from elasticquota.core.validation.messages import written_text

ViewT = TypeVar("ViewT", bound=BaseModel)
Parsed = tuple[Any, list[Problem]]


def object_ref(kind: str, raw: Mapping[str, Any]) -> str:
    """``"<Kind> <namespace>/<name>"`` from whatever metadata the object has."""
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    namespace = metadata.get("namespace") or ""
    name = metadata.get("name") or "<unnamed>"
    return f"{kind} {namespace}/{name}"


def read_view(
    model: type[ViewT], kind: str, raw: Mapping[str, Any]
) -> tuple[ViewT | None, str, list[Problem]]:
    """The object read through its view (None when it does not fit), the reference problems
    about it name (``object_ref``), and the problem that says why it does not fit."""
    ref = object_ref(kind, raw)
    try:
        return model.model_validate(raw), ref, []
    except ValidationError as error:
        details = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        return None, ref, [Problem(ref, f"invalid object: {details}", left_out=True)]


def _resources(
    ref: str, field: str, raw: Mapping[str, Any], problems: list[Problem]
) -> ResourceList | None:
    try:
        return parse_resource_list(raw)
    except QuantityError as error:
        problems.append(Problem(ref, f"{field}.{error}"))
        return None


def _annotation(
    ref: str,
    annotations: Mapping[str, str],
    key: str,
    reader: Callable[[str], Any],
    consequence: str,
    problems: list[Problem],
) -> Any:
    """Read one JSON annotation; on error report it with what happens instead and return None."""
    if key not in annotations:
        return None
    try:
        return reader(annotations[key])
    except (QuantityError, ValueError) as error:
        problems.append(Problem(ref, f"annotation {key}: {error}; {consequence}"))
        return None


# -- ElasticQuota -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuotaParse:
    """A quota as the engine takes it: the ``Quota`` read (None: the object has no name), the
    problems found, and whether the engine solves it (False: left out of its tree, it only holds
    its name, ``Quota.identity``)."""

    quota: Quota | None
    problems: list[Problem]
    usable: bool


def parse_quota_object(raw: Mapping[str, Any]) -> QuotaParse:
    """An ElasticQuota (scheduling.sigs.k8s.io or scheduling.x-k8s.io) read once
    (``core.model.quotaread``) and judged by the engine's rules: an object that does not fit its
    view, a bad quantity, a negative min or max or min above max leave it out; a bad annotation
    is noted and read as absent."""
    reading = read_quota(raw)
    quota = reading.quota
    view, ref, problems = read_view(ElasticQuotaView, keys.QUOTA_KIND, raw)
    if not isinstance(mapping_or_empty(raw.get("metadata")).get("name"), str):
        return QuotaParse(None, problems, usable=False)  # no name: nothing to hold
    if view is None:
        return QuotaParse(quota, problems, usable=False)
    quantities = [item for item in reading.unreadable if item.where != "annotation"]
    for where in ("spec.min", "spec.max"):
        first = next((item for item in quantities if item.where == where), None)
        if first is not None:
            problems.append(Problem(ref, f"{where}.{first.key}: {first.error}"))
    if quantities:
        problems.append(Problem(ref, "the quota is left out of its tree", left_out=True))
        return QuotaParse(quota, problems, usable=False)
    if not _spec_is_usable(ref, quota, problems):
        return QuotaParse(quota, problems, usable=False)
    problems += [
        Problem(ref, f"annotation {item.key}: {item.error}; {item.consequence}")
        for item in reading.unreadable
        if item.where == "annotation"
    ]
    return QuotaParse(quota, problems, usable=True)


def parse_quota(raw: Mapping[str, Any]) -> Parsed:
    """``parse_quota_object`` as the other parsers answer: the quota when the engine solves it
    (None when it is left out), and the problems."""
    parse = parse_quota_object(raw)
    return (parse.quota if parse.usable else None), parse.problems


def _spec_is_usable(ref: str, quota: Quota, problems: list[Problem]) -> bool:
    """Negative values and min > max leave the quota out; min keys outside max are only noted."""
    usable = True
    minimum, maximum = quota.min, quota.max
    for where, values in (("min", minimum), ("max", maximum)):
        negative = sorted(name for name, value in values.items() if value < 0)
        if negative:
            amounts = ", ".join(f"{key} {written_text(quota, where, key)}" for key in negative)
            problems.append(Problem(ref, f"spec.{where} has negative values: {amounts}"))
            usable = False
    above = sorted(name for name in minimum if name in maximum and minimum[name] > maximum[name])
    for name in above:
        problems.append(
            Problem(
                ref,
                f"spec.min.{name} ({format_quantity(name, minimum[name])}) is greater than "
                f"spec.max.{name} ({format_quantity(name, maximum[name])})",
            )
        )
        usable = False
    outside = sorted(set(minimum) - set(maximum))
    if outside:
        problems.append(
            Problem(
                ref,
                f"spec.min has keys that spec.max lacks ({', '.join(outside)}); "
                "they are not tracked",
            )
        )
    if not usable:
        problems.append(Problem(ref, "the quota is left out of its tree", left_out=True))
    return usable


# -- Pod --------------------------------------------------------------------------------------


def parse_pod(raw: Mapping[str, Any]) -> Parsed:
    """A Pod to a ``PodInfo`` with its effective request (API-server defaulting applied).

    A body of the common shape is read by ``podfast.read_pod`` (same result, a fraction of the
    time); any other body, broken ones included, by ``parse_pod_validated``.
    """
    pod = read_pod(raw)
    if pod is not None:
        return pod, []
    return parse_pod_validated(raw)


def released_by_gate(raw: Mapping[str, Any]) -> bool:
    """The pod's ``ElasticQuotaAdmission`` condition is True: the admission gate has released it.
    Read by ``plan`` and ``explain`` only, from the raw pod: ``PodInfo`` does not keep it (the gate
    counts every pending pod without a gate as released, whatever its conditions)."""
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return isinstance(conditions, list) and any(
        isinstance(condition, Mapping)
        and condition.get("type") == keys.ADMISSION_CONDITION
        and condition.get("status") == "True"
        for condition in conditions
    )


def parse_pod_validated(raw: Mapping[str, Any]) -> Parsed:
    """``parse_pod`` through the pydantic views: the reference the fast reader is checked against,
    and the path that reports every problem."""
    view, ref, problems = read_view(PodView, "Pod", raw)
    if view is None:
        return None, problems
    meta = view.metadata
    try:
        requests = effective_request(
            [_container_requests(container) for container in view.spec.containers],
            [
                InitContainer(_container_requests(container), container.restart_policy == "Always")
                for container in view.spec.init_containers
            ],
            _overhead(view.spec.overhead),
        )
    except QuantityError as error:
        problems.append(Problem(ref, f"resources: {error}; the pod is not accounted"))
        return None, problems
    metadata = raw.get("metadata")
    identity = pod_identity(
        meta.namespace, meta.name, meta.labels, metadata if isinstance(metadata, Mapping) else {}
    )
    if identity.problem:
        problems.append(Problem(ref, identity.problem))
    pod = PodInfo(
        namespace=intern(meta.namespace),
        name=meta.name,
        requests=SHARED_REQUESTS.share(requests),
        quota_label=intern(first_label(meta.labels, keys.POD_LABEL_QUOTA_ALIASES)),
        preemptible=meta.labels.get(keys.POD_LABEL_PREEMPTIBLE) != "false",
        priority=view.spec.priority or 0,
        phase=intern(view.status.phase),
        node_name=intern(view.spec.node_name),
        start_time=timestamp(view.status.start_time),
        created=intern(meta.creation_timestamp or ""),
        terminating=bool(meta.deletion_timestamp),
        deletion_deadline=timestamp(meta.deletion_timestamp),
        never_preempts=view.spec.preemption_policy == "Never",
        scheduling_gates=tuple(
            str(gate.get("name", "")) for gate in view.spec.scheduling_gates if gate.get("name")
        ),
        user=intern(identity.user),
        groups=identity.groups,
        application=intern(identity.application),
    )
    return pod, problems


def _container_requests(container: ContainerView) -> dict[str, Fraction]:
    """Requests, defaulted from limits where unset (as the API server does on create)."""
    merged = {**container.resources.limits, **container.resources.requests}
    return _quantities(merged, f"container {container.name!r}")


def _overhead(raw: Mapping[str, Any]) -> dict[str, Fraction]:
    return _quantities(raw, "spec.overhead")


def _quantities(raw: Mapping[str, Any], where: str) -> dict[str, Fraction]:
    """Every value parsed as a quantity; a bad one is an error naming ``where`` and its key."""
    result = {}
    for name, value in raw.items():
        try:
            result[name] = parse_quantity(value)
        except QuantityError as error:
            raise QuantityError(f"{where} {name}: {error}") from None
    return result


# -- Node -------------------------------------------------------------------------------------


def parse_node(raw: Mapping[str, Any]) -> Parsed:
    """A Node to a ``NodeInfo`` (allocatable, or capacity when allocatable is unset)."""
    view, ref, problems = read_view(NodeView, "Node", raw)
    if view is None:
        return None, problems
    if view.metadata.deletion_timestamp:
        problems.append(Problem(ref, "node is being deleted; not counted"))
        return None, problems
    allocatable = (
        view.status.allocatable if view.status.allocatable is not None else view.status.capacity
    )
    resources = _resources(ref, "status.allocatable", allocatable or {}, problems)
    if resources is None:
        problems.append(Problem(ref, "the node is not counted"))
        return None, problems
    # As Kubernetes' IsNodeReady: ready only with a Ready condition whose status is True.
    ready = any(c.type == "Ready" and c.status == "True" for c in view.status.conditions)
    node = NodeInfo(
        name=view.metadata.name,
        allocatable=resources,
        labels=dict(view.metadata.labels),
        unschedulable=view.spec.unschedulable,
        ready=ready,
    )
    return node, problems


# -- ElasticQuotaProfile ----------------------------------------------------------------------


def parse_profile(raw: Mapping[str, Any]) -> Parsed:
    """An ElasticQuotaProfile to a ``ProfileSpec``."""
    view, ref, problems = read_view(ProfileView, keys.PROFILE_KIND, raw)
    if view is None:
        return None, problems
    meta = view.metadata
    resource_keys = _annotation(
        ref,
        meta.annotations,
        keys.ANNO_RESOURCE_KEYS,
        string_list,
        f"using {list(keys.DEFAULT_PROFILE_RESOURCE_KEYS)}",
        problems,
    )
    profile = ProfileSpec(
        name=meta.name,
        namespace=meta.namespace,
        quota_name=view.spec.quota_name,
        node_selector=label_selector(view.spec.node_selector),
        quota_labels=dict(view.spec.quota_labels),
        resource_ratio=view.spec.resource_ratio,
        tree_id_label=meta.labels.get(keys.LABEL_TREE_ID, ""),
        resource_keys=(
            keys.DEFAULT_PROFILE_RESOURCE_KEYS if resource_keys is None else resource_keys
        ),
        uid=meta.uid,
    )
    return profile, problems


def label_selector(view: LabelSelectorView) -> LabelSelector:
    """A ``metav1.LabelSelector`` as the core matches it."""
    return LabelSelector(
        dict(view.match_labels),
        tuple(
            LabelRequirement(item.key, item.operator, tuple(item.values))
            for item in view.match_expressions
        ),
    )
