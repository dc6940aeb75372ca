"""A pod's effective request, as Kubernetes computes it (``PodRequests``) and the reference uses it.

Per resource: the larger of the app containers' sum (plus restartable init containers, i.e.
sidecars, which keep running) and the largest init-container step (an init container plus the
sidecars started before it); then ``spec.overhead`` is added. Sums are exact; conversion to engine
units (millicores for cpu, whole units rounded up otherwise) happens once, on the pod's total.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from elasticquota.core.quantities.quantity import to_units
from elasticquota.core.quantities.resources import ResourceList

ExactList = dict[str, Fraction]


@dataclass(frozen=True, slots=True)
class InitContainer:
    requests: ExactList
    #: ``restartPolicy: Always``: a sidecar that keeps running next to the app containers.
    restartable: bool = False


def _plus(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> ExactList:
    result = dict(left)
    for name, value in right.items():
        result[name] = result.get(name, Fraction(0)) + value
    return result


def _max(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> ExactList:
    result = dict(left)
    for name, value in right.items():
        result[name] = max(result.get(name, value), value)
    return result


def effective_request(
    containers: Sequence[Mapping[str, Fraction]],
    init_containers: Sequence[InitContainer] = (),
    overhead: Mapping[str, Fraction] | None = None,
) -> ResourceList:
    """The pod's request in engine units."""
    total: ExactList = {}
    for requests in containers:
        total = _plus(total, requests)
    sidecars: ExactList = {}
    largest_init_step: ExactList = {}
    for init in init_containers:
        if init.restartable:
            total = _plus(total, init.requests)
            sidecars = _plus(sidecars, init.requests)
            step = sidecars
        else:
            step = _plus(init.requests, sidecars)
        largest_init_step = _max(largest_init_step, step)
    total = _plus(_max(total, largest_init_step), overhead or {})
    return {name: to_units(name, value) for name, value in total.items()}
