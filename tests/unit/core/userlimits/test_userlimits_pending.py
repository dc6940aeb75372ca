"""Pods counted on top of the user limits as they come and go (``PendingPods``): the pod webhook's
admitted pods that the engine does not count yet. A check must give what an overlay of the view
with every one of them added gives (the pod checked itself left out), whatever came in between:
pods put, replaced and discarded, pods bound in the engine, limits and quota trees changed."""

from __future__ import annotations

import random

import pytest
from userlimits_builders import NODE, limited_quota, user_pod

from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.userlimits.pending import PendingPods
from elasticquota.core.userlimits.records import UserLimitVerdict
from elasticquota.core.userlimits.tracker import UserLimitsView

PARENT_LIMITS = (
    "- users: [sue]\n  maxresources: {cpu: 3}\n  maxapplications: 3\n"
    '- groups: [dev, "*"]\n  maxresources: {cpu: 5}\n  maxapplications: 4\n'
)
LEAF_LIMITS = (
    '- users: ["*"]\n  maxresources: {cpu: 2}\n',
    "- groups: [ops]\n  maxapplications: 2\n",
)


def every_one_added(
    view: UserLimitsView, pending: dict[str, tuple[PodInfo, str]], pod: PodInfo, quota: str
) -> UserLimitVerdict | None:
    """The check as an overlay of ``view`` with every pending pod (but ``pod``) added."""
    overlay = view.overlay()
    for key, (each, its_quota) in pending.items():
        if key != pod.key:
            overlay.add(each, its_quota)
    return overlay.check(pod, quota)


def random_pod(rng: random.Random, name: str, state: str) -> PodInfo:
    return user_pod(
        name,
        rng.choice(("a", "b", "other")),
        cpu=rng.choice((500, 1000, 2000)),
        user=rng.choice(("sue", "bob")),
        groups=rng.choice(((), ("dev",), ("ops", "dev"))),
        app=rng.choice(("", "ns/job-1", "ns/job-2")),
        state=state,
    )


def random_step(
    engine: QuotaEngine,
    pending: PendingPods,
    model: dict[str, tuple[PodInfo, str]],
    rng: random.Random,
) -> None:
    action = rng.randrange(7)
    if action < 3:  # admitted: pending until bound (never one the ledger counts: the caller's)
        made = random_pod(rng, f"new{rng.randrange(10)}", "released")
        quota = rng.choice(("a", "b", "other", made.quota_label))
        if made.key in engine.pods:
            return
        pending.put(made, quota)
        model[made.key] = (made, quota)
    elif action == 3 and model:  # bound: the engine counts it, no longer pending
        key = rng.choice(sorted(model))
        made, _ = model.pop(key)
        pending.discard(key)
        engine.upsert_pod(user_pod(made.name, made.quota_label, user=made.user, groups=made.groups))
    elif action == 4 and model:  # deleted before it was bound
        key = rng.choice(sorted(model))
        del model[key]
        pending.discard(key)
    elif action == 5:  # the limits change: paths and tracked groups are resolved again
        limits = rng.choice((*LEAF_LIMITS, None))
        engine.upsert_quota(limited_quota(rng.choice("ab"), "p", limits))
    else:  # a pod of the engine's runs elsewhere
        engine.upsert_pod(random_pod(rng, f"run{rng.randrange(6)}", "running"))


@pytest.mark.parametrize("seed", range(30))
def test_a_check_counts_every_pending_pod_as_an_overlay_does(seed: int) -> None:
    rng = random.Random(seed)
    engine = QuotaEngine().load(
        [
            limited_quota("p", limits=PARENT_LIMITS, is_parent=True),
            limited_quota("a", "p", LEAF_LIMITS[0]),
            limited_quota("b", "p"),
            limited_quota("other"),
        ],
        [user_pod("run0", "a"), user_pod("run1", "b", user="bob", groups=("dev",))],
        [NODE],
    )
    pending, model = PendingPods(), {}
    refused = 0
    for _ in range(80):
        random_step(engine, pending, model, rng)
        view = engine.user_limits()
        candidates = [random_pod(rng, f"new{rng.randrange(12)}", "released")]
        candidates.append(engine.pods.get("ns/run0") or candidates[0])  # counted in the ledger
        for candidate in candidates:
            quota = rng.choice(("a", "b", "other", "p"))
            verdict = pending.check(view, candidate, quota)
            assert verdict == every_one_added(view, model, candidate, quota)
            refused += verdict is not None and not verdict.allowed
    assert len(pending) == len(model)
    assert refused > 0  # the limits were reached, not only passed
