"""User and group limits enforced by the validating pod webhook, on API servers without gates.

Where the API server has pod scheduling gates (1.27+), a pod over its user's or group's limit is
held back by the admission gate and released when it fits (``controller.enforcement.gating``). Older
servers drop the gate; with ``USER_LIMITS_REFUSE_PODS`` the validating pod webhook refuses such a
pod at CREATE instead, whenever gating does not run (no gates on the server, detected once the
memory is loaded; or ``GATING=false``), with the reason the gate would give (user or group, quota,
resource or applications, numbers). Updates are never refused (decreases never are; a pod admitted
before must still be able to change).

The check is ``core.userlimits``'s, on the engine's ledger as of now (bound, unfinished pods), plus
the pods this webhook admitted in the last ``RECENT_TTL`` seconds that the ledger does not count
yet: on these servers a pod is scheduled right after it is created, so a burst of pods must see
each other, or every one of them would pass against the same usage. A pod admitted and then
pending for longer than that stops counting until it is bound (it can be scheduled at any
moment; an over-use it causes is reported, never evicted, as for a lowered limit). One deleted or
finished before it is bound stops counting as soon as memory hears of it (its Job's replacement,
or its user's next try, must not be refused for a pod that will never run); one whose identity
changes meanwhile counts for its new user and group from then on. An event about another pod of
its name, created at another time (the watch bringing the deletion of the pod it replaces after
its admission), changes nothing.

The admitted pods' figures are kept as they come and go (``core.userlimits.pending``), not added up
again for each request: a request costs O(the pod's path), not O(the pods admitted in the last
minute), which a burst of new pods made 25 ms per request at 1,000 of them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from elasticquota.api.parse import parse_pod
from elasticquota.controller.state import ControllerState
from elasticquota.core.model.models import PodInfo
from elasticquota.core.userlimits.pending import PendingPods
from elasticquota.core.validation import Violation

#: Seconds an admitted pod counts for its user before the ledger sees it bound.
RECENT_TTL: Final = 60.0
#: At most this many admitted pods are remembered (the oldest are forgotten first).
RECENT_MAX: Final = 10_000
RULE: Final = "user-limit"


class UserLimitAdmission:
    """Refuses new pods over a user or group limit, when enabled and gating cannot hold them."""

    def __init__(
        self,
        state: ControllerState,
        enabled: bool,
        ttl: float = RECENT_TTL,
        clock: Callable[[], float] = time.monotonic,
        most: int = RECENT_MAX,
    ) -> None:
        self._state = state
        self.enabled = enabled
        self._ttl = ttl
        self._most = most
        self._clock = clock
        #: The admitted pods that count, oldest admission first: when, the pod, its quota.
        self._recent: OrderedDict[str, tuple[float, PodInfo, str]] = OrderedDict()
        #: Their figures on top of the ledger's.
        self._pending = PendingPods()
        #: Admitted pods whose name a bound pod of the engine still held at their admission:
        #: that one counts, and they are forgotten at the next request (as bound ones are).
        self._bound_at_admission: set[str] = set()
        state.pod_listeners.append(self._pod_changed)

    @property
    def active(self) -> bool:
        """Enabled, and gating does not run (no gates on the server, or gating off)."""
        return self.enabled and not self._state.gates_supported

    def violations(
        self, operation: str | None, body: Mapping[str, Any], quota: str, remember: bool = True
    ) -> list[Violation]:
        """The refusal of a new pod of ``quota`` (empty: admitted, and remembered as counting
        unless ``remember`` is off: a dry run creates nothing)."""
        if not self.active or operation != "CREATE":
            return []
        pod, _ = parse_pod(body)
        if not isinstance(pod, PodInfo) or pod.is_terminal:
            return []
        view = self._state.engine.user_limits()
        now = self._clock()
        self._forget(now)
        verdict = self._pending.check(view, pod, quota)
        if verdict is None or verdict.allowed:
            if remember:
                self._remember(now, pod, quota)
            return []
        reasons = "; ".join(refusal.message for refusal in verdict.refusals)
        return [
            Violation(
                RULE,
                f"pod {pod.key} would break a user or group limit: {reasons} (this API server "
                f"has no scheduling gates to hold the pod until it fits, so it is refused; "
                f"create it again once the usage has dropped)",
            )
        ]

    def _remember(self, now: float, pod: PodInfo, quota: str) -> None:
        self._drop(pod.key)
        self._recent[pod.key] = (now, pod, quota)
        known = self._state.engine.pods.get(pod.key)
        if known is not None and known.node_name:
            self._bound_at_admission.add(pod.key)
        else:
            self._pending.put(pod, quota)
        while len(self._recent) > self._most:
            self._drop(next(iter(self._recent)))

    def _pod_changed(self, key: str, pod: PodInfo | None, created: str) -> None:
        """A pod event: one bound is the ledger's to count; one gone or finished never runs; one
        still waiting counts as it is now (its identity may have changed since its admission).
        An event about another pod of that name (created at another time: the watch bringing the
        deletion of the one it replaced after the new one's admission) changes nothing."""
        remembered = self._recent.get(key)
        if remembered is None:
            return
        since, admitted, quota = remembered
        if created and admitted.created and created != admitted.created:
            return
        if pod is None or pod.node_name or pod.is_terminal:
            self._drop(key)
        else:
            self._recent[key] = (since, pod, quota)
            self._bound_at_admission.discard(key)
            self._pending.put(pod, quota)

    def _forget(self, now: float) -> None:
        """Drop what expired (the oldest admissions first) and what the engine counts itself
        (bound: pod events drop those, but for a pod admitted while a bound pod of its name was
        still in memory)."""
        pods = self._state.engine.pods
        for key in list(self._bound_at_admission):
            known = pods.get(key)
            if known is not None and known.node_name:
                self._drop(key)
        while self._recent:
            key, (since, _, _) = next(iter(self._recent.items()))
            if now - since <= self._ttl:
                break
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._recent.pop(key, None)
        self._pending.discard(key)
        self._bound_at_admission.discard(key)
