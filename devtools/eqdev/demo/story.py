"""The demo's story: reclaim and revocation on the example cluster, step by step (``make run``).

The timeline, on the bundled examples:

1. the borrowers run while the reclaiming quota (``analytics``) is idle: every object is applied
   except that quota's pods, so ``ml-research`` borrows what ``analytics`` leaves unused;
2. after a pause, ``analytics`` asks for its min: its pods are created pending (no node, no
   status), as a user's new Job would create them;
3. the operator raises ``analytics``' runtime and shrinks the borrower's: ``ml-research`` now uses
   more than its runtime (``!`` in the tree);
4. once it has been over its runtime for the revocation delay, its least important pods are
   evicted (``Revoked`` Events); the simulated kubelet removes them after their grace period, so
   they stop counting in ``used``;
5. the simulated scheduler binds ``analytics``' pods as they fit.

Steps 3 to 5 are the operator's own doing; the demo only creates the pods of step 2 and narrates
what it sees change (:class:`Narrator`). Which pods are held back is decided with ``plan``'s own
accounting (a pod belongs to the quota ``plan`` puts it in), so the story follows the manifests.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticquota.core.quantities.quantity import CPU, MEMORY
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.results import Snapshot
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests
from elasticquota.plan.table import cell

#: The quota of the examples that is idle at first and then asks for its min.
DEFAULT_RECLAIMER = "analytics"
#: The resources the narration reports (the others only show in the tree).
NARRATED = (CPU, MEMORY)


def pod_key(manifest: Mapping[str, Any]) -> str:
    meta = manifest.get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def as_new_request(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as a user submits it: no node, no status (the scheduler has not seen it yet)."""
    body = copy.deepcopy(dict(manifest))
    body.pop("status", None)
    body.get("spec", {}).pop("nodeName", None)
    return body


@dataclass(frozen=True, slots=True)
class Story:
    """What the demo applies at the start and what it creates at the story's turn."""

    reclaimer: str
    #: Objects applied at the start (everything but the reclaimer's pods).
    first: list[dict[str, Any]]
    #: The reclaimer's pods, as new pending requests, created after the pause.
    later: list[dict[str, Any]]


def plan_story(manifests: Manifests, reclaimer: str = DEFAULT_RECLAIMER) -> Story | None:
    """Split the manifests for the story; None when the reclaimer has no pods in them."""
    accounted = compute_plan(manifests).snapshot.pod_quota
    own = {key for key, quota in accounted.items() if quota == reclaimer}
    later = [as_new_request(pod) for pod in manifests.pods if pod_key(pod) in own]
    if not later:
        return None
    others = [pod for pod in manifests.pods if pod_key(pod) not in own]
    first = [
        *manifests.namespaces,
        *manifests.priority_classes,
        *manifests.nodes,
        *manifests.profiles,
        *manifests.quotas,
        *others,
    ]
    return Story(reclaimer, first, later)


def describe_list(values: Mapping[str, int]) -> str:
    """``cpu 28.571, memory 110Gi`` for the narrated resources present."""
    return ", ".join(f"{key} {cell(key, values[key])}" for key in NARRATED if key in values)


def _narrated(values: Mapping[str, int]) -> ResourceList:
    return {key: value for key, value in values.items() if key in NARRATED}


def _over(used: Mapping[str, int], runtime: Mapping[str, int]) -> bool:
    return any(used.get(key, 0) > value for key, value in _narrated(runtime).items())


@dataclass(slots=True)
class Narrator:
    """Lines about what changed between two views of the trees: runtimes that moved, quotas
    that went over their runtime or back under it."""

    clock: Callable[[], float] = time.time
    _runtime: dict[str, ResourceList] = field(default_factory=dict)
    _over_used: set[str] = field(default_factory=set)

    def observe(self, snapshot: Snapshot) -> list[tuple[float, str]]:
        """(time, line) for every change since the last call (nothing on the first call)."""
        now = self.clock()
        lines: list[tuple[float, str]] = []
        first = not self._runtime
        for name in sorted(snapshot.quotas):
            result = snapshot.quotas[name]
            if result.reserved or not result.runtime:
                continue
            runtime = _narrated(result.runtime)
            before = self._runtime.get(name)
            self._runtime[name] = runtime
            over = _over(result.used, runtime)
            was_over = name in self._over_used
            if over:
                self._over_used.add(name)
            else:
                self._over_used.discard(name)
            if first:
                continue
            if before is not None and before != runtime:
                lines.append((now, self._moved(name, before, runtime)))
            if over and not was_over:
                lines.append(
                    (now, f"{name} is over its runtime: used {describe_list(result.used)}")
                )
            elif was_over and not over:
                lines.append((now, f"{name} is back within its runtime"))
        return lines

    @staticmethod
    def _moved(name: str, before: ResourceList, after: ResourceList) -> str:
        changes = [
            f"{key} {cell(key, before.get(key))} -> {cell(key, after.get(key))}"
            for key in NARRATED
            if before.get(key) != after.get(key)
        ]
        keys = set(before) | set(after)
        if all(after.get(key, 0) >= before.get(key, 0) for key in keys):
            verb = "grows"
        elif all(after.get(key, 0) <= before.get(key, 0) for key in keys):
            verb = "shrinks"
        else:
            verb = "changes"
        return f"runtime of {name} {verb}: {', '.join(changes)}"
