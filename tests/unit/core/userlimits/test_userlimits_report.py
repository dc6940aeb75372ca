"""The metrics view of user usage: at most N subjects per quota, the rest folded into (other)."""

from __future__ import annotations

from elasticquota.core.userlimits import OTHER, LimitedPod, UserLimitLedger, capped


def test_the_busiest_subjects_are_kept_and_the_rest_summed_under_other() -> None:
    ledger = UserLimitLedger()
    pods = {"ann": 3, "bob": 1, "cat": 2, "dan": 1}
    for user, count in pods.items():
        for index in range(count):
            ledger.add(
                LimitedPod(f"ns/{user}{index}", ("leaf", "root"), user, (), user, {"cpu": 100})
            )
    lines, folded = capped(ledger.usage(), per_quota=2)
    assert folded == 4  # bob and dan, at leaf and at root
    at_leaf = [
        (line.name, line.used, sorted(line.applications)) for line in lines if line.quota == "leaf"
    ]
    assert at_leaf == [
        ("ann", {"cpu": 300, "pods": 3}, ["ann"]),
        ("cat", {"cpu": 200, "pods": 2}, ["cat"]),
        (OTHER, {"cpu": 200, "pods": 2}, ["bob", "dan"]),
    ]
    other = next(line for line in lines if line.name == OTHER)
    assert other.limit is None and other.to_json()["maxResources"] is None


def test_nothing_is_folded_under_the_cap() -> None:
    ledger = UserLimitLedger()
    ledger.add(LimitedPod("ns/p", ("q",), "sue", (), "a", {"cpu": 1}))
    lines, folded = capped(ledger.usage(), per_quota=1)
    assert (lines, folded) == (ledger.usage(), 0)
