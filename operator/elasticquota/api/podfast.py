"""A fast reader of well-formed Pod bodies that returns exactly what the validated path returns.

Why: the operator lists and watches every Pod of the cluster, and 100,000 must be read within 30 s
on 2 cores. ``parse.parse_pod_validated`` validates a body through the pydantic views and sums
quantities as Fractions, mostly the latter: it costs several times the JSON decoding of the body.

What: ``read_pod`` reads the dicts and lists that JSON decoding produces, without pydantic. When the
body has the common shape and every value has the exact type the views expect, it returns the
``PodInfo`` the validated path would. Otherwise it returns None and ``parse.parse_pod`` takes the
validated path, which reports problems with their usual messages. Cases that return None include
a value of another type or null, a field given by its Python name instead of its JSON name,
non-ASCII names and labels, a bad quantity and an unusable ``user-info`` annotation. Every
quantity ``parse_quantity`` returns is a whole number of nano units. So requests are summed and
compared as exact integers and converted to engine units once, rounded as ``effective_request``
rounds. Parsed quantity texts are memoized.
``tests/unit/api/test_podfast_shapes.py``, ``test_podfast_fields.py`` and
``test_podfast_generated.py`` check both paths against each other.
"""

from __future__ import annotations

from functools import lru_cache
from sys import intern
from typing import Any, Final, TypeGuard

from pydantic import BaseModel

from elasticquota.api.fields import pod_identity, timestamp
from elasticquota.api.schema import ContainerView, ObjectMeta, PodSpecView, PodStatusView
from elasticquota.core import keys
from elasticquota.core.keys import first_label
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.quantity import CPU, parse_quantity
from elasticquota.core.quantities.resources import ResourceList, SharedLists

Nanos = dict[str, int]
"""Resource name to an exact quantity in nano units (10**-9 of the Kubernetes value)."""

_NANOS_PER_UNIT: Final = 10**9
_NANOS_PER_MILLI: Final = 10**6
#: Longer quantity texts (all but certainly invalid) are parsed every time, not kept in the memo.
_LONGEST_CACHED_TEXT: Final = 64
#: Defaults for absent fields; only compared and read, never changed.
_NO_MAP: Final[dict[str, Any]] = {}
_NO_LIST: Final[list[Any]] = []


def _python_names(view: type[BaseModel]) -> frozenset[str]:
    """Field names the view also accepts besides their JSON alias (``populate_by_name``)."""
    return frozenset(
        name for name, field in view.model_fields.items() if field.alias not in (None, name)
    )


_META_NAMES: Final = _python_names(ObjectMeta)
_SPEC_NAMES: Final = _python_names(PodSpecView)
_CONTAINER_NAMES: Final = _python_names(ContainerView)
_STATUS_NAMES: Final = _python_names(PodStatusView)


def read_pod(raw: object) -> PodInfo | None:
    """The ``PodInfo`` of a plain, well-formed Pod body; None to take the validated path."""
    if type(raw) is not dict:
        return None
    meta = raw.get("metadata")
    spec = raw.get("spec", _NO_MAP)
    status = raw.get("status", _NO_MAP)
    if not (_is_plain_meta(meta) and _is_plain_spec(spec) and _is_plain_status(status)):
        return None
    requests = _effective_request(spec)
    if requests is None:
        return None
    labels = meta.get("labels", _NO_MAP)
    namespace = meta.get("namespace", "")
    identity = pod_identity(namespace, meta["name"], labels, meta)
    if identity.problem:
        return None  # the validated path reports it
    deletion = meta.get("deletionTimestamp")
    gates = spec.get("schedulingGates")
    return PodInfo(
        namespace=intern(namespace),
        name=meta["name"],
        requests=SHARED_REQUESTS.share(requests),
        quota_label=intern(first_label(labels, keys.POD_LABEL_QUOTA_ALIASES)),
        preemptible=labels.get(keys.POD_LABEL_PREEMPTIBLE) != "false",
        priority=spec.get("priority") or 0,
        phase=intern(status.get("phase", "Pending")),
        node_name=intern(spec.get("nodeName", "")),
        start_time=timestamp(status.get("startTime")),
        created=intern(meta.get("creationTimestamp") or ""),
        terminating=bool(deletion),
        deletion_deadline=timestamp(deletion) if deletion else None,
        never_preempts=spec.get("preemptionPolicy") == "Never",
        scheduling_gates=_gate_names(gates) if gates else (),
        user=intern(identity.user),
        groups=identity.groups,
        application=intern(identity.application),
    )


def _gate_names(gates: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(str(gate.get("name", "")) for gate in gates if gate.get("name"))


# -- shape and types, exactly as the views accept them -------------------------------------------


def _is_plain(value: object, python_names: frozenset[str]) -> TypeGuard[dict[str, Any]]:
    """A dict that names none of its fields by their Python name."""
    return type(value) is dict and value.keys().isdisjoint(python_names)


def _is_name(value: object) -> bool:
    """Text the views take as it is, and ASCII, as every Kubernetes name, label, phase and
    timestamp is. Other text is left to pydantic: it refuses lone surrogates in some fields."""
    return type(value) is str and value.isascii()


def _is_optional_name(value: object) -> bool:
    return value is None or (type(value) is str and value.isascii())


def _is_text(value: object) -> bool:
    """Text that UTF-8 can encode. pydantic takes lone surrogates in some fields and refuses them
    in others (a constrained ``name``), so text with them is left to it everywhere."""
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _is_label_map(value: object) -> bool:
    """A ``dict[str, str]`` of names."""
    if type(value) is not dict:
        return False
    # A loop, not all() over a generator: this runs for every pod, and the loop takes half as long.
    for key, item in value.items():
        if not (type(key) is str and type(item) is str and key.isascii() and item.isascii()):
            return False
    return True


def _is_annotation_map(value: object) -> bool:
    """A ``dict[str, str]`` with names as keys and any text as values."""
    if type(value) is not dict:
        return False
    for key, item in value.items():  # noqa: SIM110 - a loop, as in _is_label_map
        if not (type(key) is str and key.isascii() and _is_text(item)):
            return False
    return True


def _is_plain_meta(meta: object) -> TypeGuard[dict[str, Any]]:
    if not _is_plain(meta, _META_NAMES):
        return False
    name = meta.get("name")
    namespace = meta.get("namespace", "")
    return (
        type(name) is str
        and name.isascii()
        and name != ""
        and type(namespace) is str
        and namespace.isascii()
        and _is_label_map(meta.get("labels", _NO_MAP))
        and ("annotations" not in meta or _is_annotation_map(meta["annotations"]))
        and _is_optional_name(meta.get("creationTimestamp"))
        and _is_optional_name(meta.get("deletionTimestamp"))
        and ("uid" not in meta or _is_name(meta["uid"]))
    )


def _is_plain_spec(spec: object) -> TypeGuard[dict[str, Any]]:
    """The spec's fields other than the containers and the overhead (read with the requests)."""
    if not _is_plain(spec, _SPEC_NAMES):
        return False
    priority = spec.get("priority")
    node_name = spec.get("nodeName", "")
    policy = spec.get("preemptionPolicy")
    return (
        (priority is None or type(priority) is int)
        and type(node_name) is str
        and node_name.isascii()
        and (policy is None or (type(policy) is str and policy.isascii()))
        and ("schedulingGates" not in spec or _are_plain_gates(spec["schedulingGates"]))
    )


def _are_plain_gates(gates: object) -> bool:
    """A ``list[dict[str, Any]]``."""
    return type(gates) is list and all(
        type(gate) is dict and all(map(_is_name, gate)) for gate in gates
    )


def _is_plain_status(status: object) -> TypeGuard[dict[str, Any]]:
    if not _is_plain(status, _STATUS_NAMES):
        return False
    phase = status.get("phase", "Pending")
    return type(phase) is str and phase.isascii() and _is_optional_name(status.get("startTime"))


# -- requests -----------------------------------------------------------------------------------


def _effective_request(spec: dict[str, Any]) -> ResourceList | None:
    """``podrequest.effective_request`` in exact nano units, for plain containers only."""
    containers = spec.get("containers", _NO_LIST)
    init_containers = spec.get("initContainers", _NO_LIST)
    overhead = spec.get("overhead", _NO_MAP)
    if type(containers) is not list or type(init_containers) is not list:
        return None
    if type(overhead) is not dict:
        return None
    total: Nanos = {}
    for container in containers:
        requests = _container_requests(container)
        if requests is None:
            return None
        _add(total, requests)
    if init_containers and not _add_init_containers(total, init_containers):
        return None
    if overhead:
        overhead_nanos = _nanos_of(overhead)
        if overhead_nanos is None:
            return None
        _add(total, overhead_nanos)
    return _to_units(total)


def _add_init_containers(total: Nanos, init_containers: list[Any]) -> bool:
    """Add the sidecars to ``total``, then raise it to the largest init step (False: not plain).

    A sidecar (``restartPolicy: Always``) keeps running: it adds to the app containers and to
    every later init step.
    """
    sidecars: Nanos = {}
    largest: Nanos = {}
    for container in init_containers:
        requests = _container_requests(container)
        if requests is None:
            return False
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _raise_to(largest, sidecars)
        else:
            step = dict(requests)
            _add(step, sidecars)
            _raise_to(largest, step)
    _raise_to(total, largest)
    return True


def _container_requests(container: object) -> Nanos | None:
    """Requests, defaulted from limits where unset (as the API server does on create)."""
    if type(container) is not dict or not container.keys().isdisjoint(_CONTAINER_NAMES):
        return None
    name = container.get("name", "")
    policy = container.get("restartPolicy")
    resources = container.get("resources", _NO_MAP)
    if not (
        type(name) is str
        and name.isascii()
        and (policy is None or (type(policy) is str and policy.isascii()))
        and type(resources) is dict
    ):
        return None
    requests = resources.get("requests", _NO_MAP)
    limits = resources.get("limits", _NO_MAP)
    if type(requests) is not dict or type(limits) is not dict:
        return None
    return _nanos_of({**limits, **requests} if limits else requests)


def _nanos_of(quantities: dict[Any, Any]) -> Nanos | None:
    result: Nanos = {}
    for name, value in quantities.items():
        if type(name) is not str or not name.isascii():
            return None
        if type(value) is str and len(value) <= _LONGEST_CACHED_TEXT:
            nanos = _text_nanos(value)
        elif type(value) is str or type(value) is int or type(value) is float:
            nanos = _nanos(value)
        else:
            return None
        if nanos is None:
            return None
        result[name] = nanos
    return result


def _nanos(value: str | int | float) -> int | None:
    """A quantity in nano units; None when it is not valid (the validated path says why)."""
    try:
        exact = parse_quantity(value) * _NANOS_PER_UNIT
    except ValueError:
        # A QuantityError, or an exponent too long for int(): the validated path meets the same
        # error, after it has checked the whole body.
        return None
    # parse_quantity raises every non-zero magnitude below one nano to one nano.
    return exact.numerator if exact.denominator == 1 else None


#: Pods' requests, one dict for equal ones (both readers: the validated path uses it too).
SHARED_REQUESTS: Final = SharedLists()

#: The memo of quantity texts. Only texts: as keys True == 1 == 1.0, yet they parse apart.
_text_nanos: Final = lru_cache(maxsize=4096)(_nanos)


def _add(total: Nanos, more: Nanos) -> None:
    if not total:  # the same, faster
        total.update(more)
        return
    for name, nanos in more.items():
        total[name] = total.get(name, 0) + nanos


def _raise_to(total: Nanos, floor: Nanos) -> None:
    for name, nanos in floor.items():
        total[name] = max(total.get(name, nanos), nanos)


def _to_units(total: Nanos) -> ResourceList:
    """``quantity.to_units`` of each: millicores for cpu, whole units else, rounded away from 0."""
    units: ResourceList = {}
    for name, nanos in total.items():
        per_unit = _NANOS_PER_MILLI if name == CPU else _NANOS_PER_UNIT
        units[name] = -(-nanos // per_unit) if nanos >= 0 else nanos // per_unit
    return units
