"""Pods counted on top of the user limits' view as they come and go: those the engine does not
count yet (admitted by the pod webhook, not bound).

Where the API server has no scheduling gates, the validating pod webhook refuses a new pod over a
user or group limit, counting the pods it admitted a moment ago on top of the engine's ledger
(``controller.webhooks.userlimit_admission``). Adding each of them to an overlay of the ledger
(``LedgerView.overlay``) for every request cost every request O(those pods): 25 ms at 1,000 of
them in a limited tree, more per request the longer a burst of new pods lasts. Here their figures
are kept per tree as the ledger keeps its own (``counting.count_pod``), changed as they are put
and discarded, and a check adds them to the ledger's only at the levels it reads
(``PendingLedger.on_top_of``): O(the pod's path), plus the pending applications of its user and
group at those levels (each looked up in the ledger). They are counted again, all of them, only
when the limits or the quota trees change (their paths and tracked groups come from those).
"""

from __future__ import annotations

from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import ResourceList, add
from elasticquota.core.userlimits.book import LimitBook
from elasticquota.core.userlimits.counting import (
    SEP,
    Counted,
    at_key,
    count_pod,
    path_levels,
    subjects,
)
from elasticquota.core.userlimits.ledger import LedgerView
from elasticquota.core.userlimits.records import LimitedPod, UserLimitVerdict
from elasticquota.core.userlimits.tracker import UserLimitsView, limited_pod


class _AppsByLevel(dict[str, int]):
    """Pods per application key (``at`` NUL application), and the applications of each ``at``."""

    def __init__(self) -> None:
        super().__init__()
        self.of: dict[str, set[str]] = {}

    def __setitem__(self, key: str, value: int) -> None:
        at, _, app = key.rpartition(SEP)
        self.of.setdefault(at, set()).add(app)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        at, _, app = key.rpartition(SEP)
        apps = self.of[at]
        apps.discard(app)
        if not apps:
            del self.of[at]


class PendingLedger:
    """One tree's pending pods, counted as its ledger counts them (with its book)."""

    def __init__(self, book: LimitBook) -> None:
        self.book = book
        self._counted: dict[str, Counted] = {}
        self._used: dict[str, ResourceList] = {}
        self._running: dict[str, int] = {}
        self._apps = _AppsByLevel()

    def add(self, pod: LimitedPod) -> None:
        """Count ``pod`` (not counted here yet)."""
        entry = Counted(pod, self.book.tracked_group(pod.path, pod.groups), pod.counted())
        self._counted[pod.key] = entry
        count_pod(entry, +1, self._used, self._running, self._apps)

    def remove(self, key: str) -> None:
        entry = self._counted.pop(key, None)
        if entry is not None:
            count_pod(entry, -1, self._used, self._running, self._apps)

    def on_top_of(self, base: LedgerView, pod: LimitedPod) -> LedgerView:
        """``base`` with these pods counted too, ``pod`` itself left out, where ``check(pod)``
        reads (its path, for its user and its tracked group): there, what an overlay of ``base``
        with each of them added holds (none of them is counted in ``base``)."""
        own = self._counted.get(pod.key)
        if own is not None:
            count_pod(own, -1, self._used, self._running, self._apps)
        try:
            return self._figures(base, pod)
        finally:
            if own is not None:
                count_pod(own, +1, self._used, self._running, self._apps)

    def _figures(self, base: LedgerView, pod: LimitedPod) -> LedgerView:
        group = base.book.tracked_group(pod.path, pod.groups)
        used: dict[str, ResourceList] = {}
        running: dict[str, int] = {}
        apps: dict[str, int] = {}
        for kind, name in subjects(pod.user, group):
            for quota in path_levels(pod.path):
                at = at_key(kind, name, quota)
                used[at] = add(base.used_at(at), self._used.get(at) or {})
                started = [
                    app for app in self._apps.of.get(at, ()) if not base.runs(at + SEP + app)
                ]
                running[at] = base.running_at(at) + len(started)
                app_key = f"{at}{SEP}{pod.app}"
                if base.runs(app_key) or app_key in self._apps:
                    apps[app_key] = 1
        return LedgerView(base.book, {}, used, running, apps)


class PendingPods:
    """Pods to count on top of a ``UserLimitsView``, by key (see the module's docstring)."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[PodInfo, str]] = {}
        #: The view whose paths and books the counts were made with (None: none yet).
        self._view: UserLimitsView | None = None
        self._trees: dict[str, PendingLedger] = {}
        self._tree_of: dict[str, str] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def put(self, pod: PodInfo, quota: str) -> None:
        """Count ``pod`` of ``quota`` (instead of the pod counted under its key, if any)."""
        self.discard(pod.key)
        self._pods[pod.key] = (pod, quota)
        self._count(pod, quota)

    def discard(self, key: str) -> None:
        if self._pods.pop(key, None) is None:
            return
        tree = self._tree_of.pop(key, None)
        if tree is not None:
            self._trees[tree].remove(key)

    def check(self, view: UserLimitsView, pod: PodInfo, quota: str) -> UserLimitVerdict | None:
        """``view``'s check of ``pod`` with these pods counted (but ``pod`` itself): None when
        no ledger covers ``quota``, as ``UserLimitsView.check``."""
        self._follow(view)
        found = view.ledger_of(quota)
        if found is None:
            return None
        tree, ledger, path = found
        limited = limited_pod(pod, path, view.default_user)
        pending = self._trees.get(tree)
        if pending is None or limited.key in ledger:
            return ledger.check(limited)
        return pending.on_top_of(ledger, limited).check(limited)

    def _follow(self, view: UserLimitsView) -> None:
        """Count every pod again when ``view``'s paths or books are not those of the counts."""
        if self._view is not None and view.same_limits(self._view):
            self._view = view
            return
        self._view, self._trees, self._tree_of = view, {}, {}
        for pod, quota in self._pods.values():
            self._count(pod, quota)

    def _count(self, pod: PodInfo, quota: str) -> None:
        found = None if self._view is None else self._view.ledger_of(quota)
        if self._view is None or found is None:
            return  # counted once a view covers its quota (``_follow``)
        tree, ledger, path = found
        pending = self._trees.get(tree)
        if pending is None:
            pending = self._trees[tree] = PendingLedger(ledger.book)
        pending.add(limited_pod(pod, path, self._view.default_user))
        self._tree_of[pod.key] = tree
