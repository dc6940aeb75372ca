"""Accounting per user and tracked group, and admission, with YuniKorn's examples (and the seed
example's limits).

cpu is in millicores, memory in bytes (engine units). Paths run from the pod's quota to the root.
"""

from __future__ import annotations

from userlimits_examples import SEED
from userlimits_ledger_helpers import MI, book_of, pod, refused_on, start

from elasticquota.core.userlimits import APPLICATIONS, WILDCARD, OverUse, UserLimitLedger

# -- YuniKorn's examples --------------------------------------------------------------------------


def test_user_group_limit_resources_refuse_a_second_application() -> None:
    """``TestUserGroupLimit``: {cpu 50, memory 50Mi}, 2 apps; one app of 50/50Mi runs."""
    ledger = UserLimitLedger(
        book_of(
            {
                "q": (
                    None,
                    "- users: [sue]\n  maxresources: {cpu: 50, memory: 50Mi}\n  maxapplications: 2",
                )
            }
        )
    )
    start(ledger, pod(("q",), app="a1", cpu=50_000, memory=50 * MI))
    assert refused_on(ledger, pod(("q",), app="a2", cpu=50_000, memory=50 * MI)) == [
        ("user", "sue", "q", "cpu"),
        ("user", "sue", "q", "memory"),
    ]


def test_user_group_limit_applications_refuse_a_second_application_not_the_first() -> None:
    """``TestUserGroupLimit``: 1 app, 100/100Mi: app 2 refused on applications, app 1 grows."""
    ledger = UserLimitLedger(
        book_of(
            {
                "q": (
                    None,
                    "- users: [sue]\n  maxresources: {cpu: 100, memory: 100Mi}\n"
                    "  maxapplications: 1",
                )
            }
        )
    )
    start(ledger, pod(("q",), app="a1", cpu=50_000, memory=50 * MI))
    assert refused_on(ledger, pod(("q",), app="a2", cpu=1)) == [("user", "sue", "q", APPLICATIONS)]
    start(ledger, pod(("q",), app="a1", cpu=50_000, memory=50 * MI))  # exactly at the limit
    assert ledger.used("user", "sue", "q") == {"cpu": 100_000, "memory": 100 * MI, "pods": 2}
    assert refused_on(ledger, pod(("q",), app="a1", cpu=1)) == [("user", "sue", "q", "cpu")]


def test_separate_user_and_group_headroom_the_smaller_wins() -> None:
    """``TestSeparateUserGroupHeadroom``: user 100, group 50, 25 used: 25 more fit, 26 do not."""
    ledger = UserLimitLedger(
        book_of(
            {
                "q": (
                    None,
                    "- users: [sue]\n  maxresources: {cpu: 100}\n"
                    "- groups: [dev]\n  maxresources: {cpu: 50}",
                )
            }
        )
    )
    start(ledger, pod(("q",), groups=("dev",), cpu=25_000))
    assert refused_on(ledger, pod(("q",), groups=("dev",), cpu=26_000)) == [
        ("group", "dev", "q", "cpu")
    ]
    start(ledger, pod(("q",), groups=("dev",), cpu=25_000))
    # Both limits apply; the user's does not override the group's.
    assert ledger.used("group", "dev", "q")["cpu"] == 50_000


def test_use_wildcard_parent_50_root_140_and_a_named_user_at_parent() -> None:
    """``TestUseWildCard``: an unnamed user gets 50 at parent, a user named there with 70 gets 70;
    five allocations of 10 fill the unnamed user at parent."""
    ledger = UserLimitLedger(
        book_of(
            {
                "root": (None, '- users: ["*"]\n  maxresources: {cpu: 140}'),
                "parent": (
                    "root",
                    "- users: [sue]\n  maxresources: {cpu: 70}\n"
                    '- users: ["*"]\n  maxresources: {cpu: 50}',
                ),
                "leaf": ("parent", ""),
            }
        )
    )
    path = ("leaf", "parent", "root")
    for _ in range(5):
        start(ledger, pod(path, user="bob", cpu=10_000))
    assert refused_on(ledger, pod(path, user="bob", cpu=10_000)) == [
        ("user", "bob", "parent", "cpu")
    ]
    for _ in range(7):
        start(ledger, pod(path, user="sue", cpu=10_000))
    assert refused_on(ledger, pod(path, user="sue", cpu=10_000)) == [
        ("user", "sue", "parent", "cpu")
    ]


def test_quota_enforcement_at_every_level_root_60_parent_50_child_20() -> None:
    """``TestQTQuotaEnforcement``: a child full at 20 refuses there; 50 under parent refuses at
    parent for every child, including one without limits."""
    ledger = UserLimitLedger(
        book_of(
            {
                "root": (None, "- users: [sue]\n  maxresources: {cpu: 60}"),
                "parent": ("root", "- users: [sue]\n  maxresources: {cpu: 50}"),
                "child": ("parent", "- users: [sue]\n  maxresources: {cpu: 20}"),
                "free": ("parent", ""),
                "other": ("root", ""),
            }
        )
    )
    child, free = ("child", "parent", "root"), ("free", "parent", "root")
    start(ledger, pod(child, cpu=20_000))
    assert refused_on(ledger, pod(child, cpu=1)) == [("user", "sue", "child", "cpu")]
    start(ledger, pod(free, cpu=30_000))
    assert refused_on(ledger, pod(free, cpu=1)) == [("user", "sue", "parent", "cpu")]
    start(ledger, pod(("other", "root"), cpu=10_000))
    assert refused_on(ledger, pod(("other", "root"), cpu=1)) == [("user", "sue", "root", "cpu")]


def test_multiple_group_limit_change_moves_a_groups_members_to_the_catch_all() -> None:
    """``TestMultipleGroupLimitChange``: [group1, group2] large + ``*`` medium; removing group2
    from the named limit sends its members' usage to ``*``."""
    before = book_of(
        {
            "q": (
                None,
                "- groups: [group1, group2]\n  maxresources: {cpu: 100}\n"
                '- groups: ["*"]\n  maxresources: {cpu: 10}',
            )
        }
    )
    after = book_of(
        {
            "q": (
                None,
                "- groups: [group1]\n  maxresources: {cpu: 100}\n"
                '- groups: ["*"]\n  maxresources: {cpu: 10}',
            )
        }
    )
    ledger = UserLimitLedger(before)
    running = start(ledger, pod(("q",), user="bob", groups=("group2",), cpu=40_000))
    assert ledger.tracked_group(running.key) == "group2"
    ledger.replace_book(after)
    assert ledger.tracked_group(running.key) == WILDCARD
    assert ledger.used("group", WILDCARD, "q")["cpu"] == 40_000
    assert ledger.used("group", "group2", "q") == {}
    # Now over the catch-all: reported, not evicted; a new pod of that group is refused.
    assert ledger.over_use() == [OverUse("group", WILDCARD, "q", "cpu", 40_000, 10_000, "*")]
    assert running.key in ledger
    assert refused_on(ledger, pod(("q",), user="eve", groups=("group2",), cpu=1)) == [
        ("group", WILDCARD, "q", "cpu")
    ]


def test_seed_example_sue_development_test_and_the_catch_alls() -> None:
    ledger = UserLimitLedger(book_of({"team": (None, SEED)}))
    team = ("team",)
    # sue may use 5 cpu; every other user 1.
    start(ledger, pod(team, user="sue", groups=("development",), cpu=5_000))
    assert refused_on(ledger, pod(team, user="sue", groups=("development",), cpu=1)) == [
        ("user", "sue", "team", "cpu")
    ]
    # development and test have 10 cpu each, separately.
    for user in ("ann", "ben", "cat", "dan", "eva"):
        start(ledger, pod(team, user=user, groups=("test",), cpu=1_000))
    for user in ("fay", "gus", "hal", "ivy", "jon"):
        start(ledger, pod(team, user=user, groups=("development", "test"), cpu=1_000))
    assert ledger.used("group", "development", "team")["cpu"] == 10_000
    assert ledger.used("group", "test", "team")["cpu"] == 5_000
    assert refused_on(ledger, pod(team, user="kim", groups=("development",), cpu=1_000)) == [
        ("group", "development", "team", "cpu")
    ]
    start(ledger, pod(team, user="kim", groups=("test",), cpu=1_000))
    # Everyone in neither group shares the catch-all's 50G; 10G each at most.
    for user in ("u1", "u2", "u3", "u4", "u5"):
        start(ledger, pod(team, user=user, groups=("ops",), memory=10 * 10**9))
    verdict = ledger.check(pod(team, user="u6", groups=("interns",), memory=1))
    assert verdict.group == WILDCARD
    assert [(r.name, r.resource) for r in verdict.refusals] == [("*", "memory")]
    assert verdict.reason == (
        "group * at quota team: memory: requested 1, used 50G of limit 50G "
        "(user limit group catch all)"
    )
    # A user without groups has no group: only the user catch-all applies.
    start(ledger, pod(team, user="u7", memory=10 * 10**9))
    assert ledger.check(pod(team, user="u7", memory=1)).group is None
