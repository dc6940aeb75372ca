"""Accounting per user and tracked group, and admission, with YuniKorn's examples.

cpu is in millicores, memory in bytes (engine units). Paths run from the pod's quota to the root.
"""

from __future__ import annotations

import itertools

from userlimits_examples import SEED

from elasticquota.core.userlimits import (
    APPLICATIONS,
    WILDCARD,
    LimitBook,
    LimitedPod,
    LimitRefusal,
    OverUse,
    QuotaLimitSource,
    UserLimitLedger,
    build_book,
)

MI = 1024**2
_names = itertools.count()


def book_of(tree: dict[str, tuple[str | None, str]]) -> LimitBook:
    book, problems = build_book(
        QuotaLimitSource(name, parent, text) for name, (parent, text) in tree.items()
    )
    assert problems == []
    return book


def pod(
    path: tuple[str, ...],
    user: str = "sue",
    app: str = "",
    groups: tuple[str, ...] = (),
    **request: int,
) -> LimitedPod:
    return LimitedPod(f"ns/p{next(_names)}", path, user, groups, app, request)


def refused_on(ledger: UserLimitLedger, candidate: LimitedPod) -> list[tuple[str, str, str, str]]:
    return [(r.kind, r.name, r.quota, r.resource) for r in ledger.check(candidate).refusals]


def start(ledger: UserLimitLedger, candidate: LimitedPod) -> LimitedPod:
    assert ledger.check(candidate).allowed, ledger.check(candidate).reason
    ledger.add(candidate)
    return candidate


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
        "group * at quota team: memory: requested 1, used 48828125Ki of limit 48828125Ki "
        "(user limit group catch all)"
    )
    # A user without groups has no group: only the user catch-all applies.
    start(ledger, pod(team, user="u7", memory=10 * 10**9))
    assert ledger.check(pod(team, user="u7", memory=1)).group is None


# -- accounting and admission rules ----------------------------------------------------------------


def test_usage_is_hierarchical_and_tracked_for_every_user_with_or_without_limits() -> None:
    ledger = UserLimitLedger()
    start(ledger, pod(("leaf", "mid", "root"), user="sue", app="a", cpu=1_000, memory=MI))
    start(ledger, pod(("other", "mid", "root"), user="sue", app="a", cpu=500))
    assert ledger.used("user", "sue", "leaf") == {"cpu": 1_000, "memory": MI, "pods": 1}
    assert ledger.used("user", "sue", "mid") == {"cpu": 1_500, "memory": MI, "pods": 2}
    # One application with pods in two quotas runs once per quota subtree.
    assert ledger.running_applications("user", "sue", "mid") == {"a"}
    assert ledger.running_applications("user", "sue", "leaf") == {"a"}
    assert ledger.running_applications("user", "sue", "other") == {"a"}
    # Groups are tracked only when one is resolved (no limits: none).
    assert ledger.snapshot().keys() == {("user", "sue")}


def test_an_application_runs_until_its_last_pod_stops() -> None:
    ledger = UserLimitLedger(book_of({"q": (None, "- users: [sue]\n  maxapplications: 1")}))
    first = start(ledger, pod(("q",), app="a", cpu=1))
    second = start(ledger, pod(("q",), app="a", cpu=1))  # the same application: no new one
    assert refused_on(ledger, pod(("q",), app="b")) == [("user", "sue", "q", APPLICATIONS)]
    ledger.remove(first.key)
    assert refused_on(ledger, pod(("q",), app="b")) == [("user", "sue", "q", APPLICATIONS)]
    ledger.remove(second.key)
    assert ledger.check(pod(("q",), app="b")).allowed
    assert ledger.snapshot() == {}  # nothing left behind


def test_a_pending_pod_of_a_running_application_is_not_a_new_application() -> None:
    ledger = UserLimitLedger(book_of({"q": (None, "- users: [sue]\n  maxapplications: 2")}))
    start(ledger, pod(("q",), app="a"))
    start(ledger, pod(("q",), app="b"))
    assert ledger.check(pod(("q",), app="a")).allowed
    assert not ledger.check(pod(("q",), app="c")).allowed
    # Without an application id each pod is an application of its own.
    assert not ledger.check(pod(("q",))).allowed


def test_only_the_listed_resources_that_the_pod_requests_are_checked() -> None:
    ledger = UserLimitLedger(
        book_of({"q": (None, "- users: [sue]\n  maxresources: {cpu: 1, nvidia.com/gpu: 0}")})
    )
    start(ledger, pod(("q",), cpu=1_000, memory=10**12))  # memory is not limited
    assert ledger.check(pod(("q",), memory=10**12)).allowed  # requests no over-used resource
    assert refused_on(ledger, pod(("q",), **{"nvidia.com/gpu": 1})) == [
        ("user", "sue", "q", "nvidia.com/gpu")  # limited to 0: none of it
    ]


def test_a_pods_limit_counts_one_per_pod() -> None:
    ledger = UserLimitLedger(book_of({"q": (None, "- users: [sue]\n  maxresources: {pods: 2}")}))
    start(ledger, pod(("q",)))
    start(ledger, pod(("q",)))
    assert refused_on(ledger, pod(("q",))) == [("user", "sue", "q", "pods")]


def test_a_lowered_limit_is_reported_never_evicts_and_holds_new_pods_back() -> None:
    ledger = UserLimitLedger(
        book_of({"q": (None, "- users: [sue]\n  maxresources: {cpu: 4}\n  maxapplications: 3")})
    )
    pods = [start(ledger, pod(("q",), app=app, cpu=1_000)) for app in ("a", "b", "c")]
    assert ledger.over_use() == []
    ledger.replace_book(
        book_of(
            {
                "q": (
                    None,
                    "- limit: lowered\n  users: [sue]\n  maxresources: {cpu: 2}\n"
                    "  maxapplications: 1",
                )
            }
        )
    )
    assert [entry.message for entry in ledger.over_use()] == [
        "user sue at quota q is over its applications limit: 3 running, limit 1 (user limit "
        "lowered); new pods are held back, none is evicted",
        "user sue at quota q is over its cpu limit: used 3, limit 2 (user limit lowered); "
        "new pods are held back, none is evicted",
    ]
    assert all(p.key in ledger for p in pods)
    assert refused_on(ledger, pod(("q",), app="a", cpu=1)) == [("user", "sue", "q", "cpu")]
    assert ledger.check(pod(("q",), app="a", memory=1)).allowed  # no cpu: still fits
    # Decreases are never refused; once under the limit again, pods fit again.
    ledger.remove(pods[0].key)
    ledger.remove(pods[1].key)
    assert ledger.check(pod(("q",), app="c", cpu=1_000)).allowed


def test_the_verdict_names_the_subject_quota_resource_and_numbers() -> None:
    ledger = UserLimitLedger(
        book_of(
            {
                "q": (
                    None,
                    "- limit: interns\n  groups: [interns]\n  maxresources: {cpu: 2}\n"
                    "  maxapplications: 1",
                )
            }
        )
    )
    start(ledger, pod(("q",), user="amy", groups=("interns",), app="a", cpu=1_500))
    verdict = ledger.check(pod(("q",), user="bo", groups=("interns",), app="b", cpu=1_000))
    assert not verdict.allowed
    assert verdict.refusals == (
        LimitRefusal("group", "interns", "q", "cpu", 1_000, 1_500, 2_000, "interns"),
        LimitRefusal("group", "interns", "q", APPLICATIONS, 1, 1, 1, "interns"),
    )
    assert [r.message for r in verdict.refusals] == [
        "group interns at quota q: cpu: requested 1, used 1500m of limit 2 (user limit interns)",
        "group interns at quota q: applications: a new application would make 2 running, "
        "limit 1 (user limit interns)",
    ]


def test_refusals_run_from_the_leaf_to_the_root_user_before_group() -> None:
    ledger = UserLimitLedger(
        book_of(
            {
                "root": (None, "- users: [sue]\n  groups: [dev]\n  maxresources: {cpu: 1}"),
                "leaf": ("root", "- users: [sue]\n  groups: [dev]\n  maxresources: {cpu: 1}"),
            }
        )
    )
    assert refused_on(ledger, pod(("leaf", "root"), groups=("dev",), cpu=2_000)) == [
        ("user", "sue", "leaf", "cpu"),
        ("group", "dev", "leaf", "cpu"),
        ("user", "sue", "root", "cpu"),
        ("group", "dev", "root", "cpu"),
    ]


def test_checking_a_counted_pod_changes_nothing_and_adding_it_again_replaces_it() -> None:
    ledger = UserLimitLedger(book_of({"q": (None, "- users: [sue]\n  maxresources: {cpu: 1}")}))
    running = start(ledger, pod(("q",), cpu=1_000))
    assert ledger.check(running).allowed
    ledger.add(LimitedPod(running.key, ("q",), "sue", (), "", {"cpu": 500}))
    assert ledger.used("user", "sue", "q") == {"cpu": 500, "pods": 1}
    assert len(ledger) == 1
    assert ledger.remove("ns/unknown") is None


def test_usage_document_follows_the_plan_contract() -> None:
    ledger = UserLimitLedger(
        book_of(
            {
                "root": (
                    None,
                    '- users: [sue]\n  maxapplications: 2\n- groups: [dev, "*"]\n'
                    "  maxresources: {cpu: 4}",
                ),
                "leaf": ("root", ""),
            }
        )
    )
    start(ledger, pod(("leaf", "root"), user="bob", groups=("ops",), app="x", cpu=1_000))
    one_pod = {"used": {"cpu": "1", "pods": "1"}, "applications": 1}
    unlimited = {"maxResources": None, "maxApplications": None, "limit": None}
    unused = {"used": {}, "applications": 0}
    four_cpu = {"cpu": "4"}
    assert ledger.usage_document() == {
        "users": {
            "bob": {"leaf": one_pod | unlimited, "root": one_pod | unlimited},
            # A named limit shows even without usage (as YuniKorn's REST does).
            "sue": {
                "root": unused | {"maxResources": None, "maxApplications": 2, "limit": "#1"},
            },
        },
        "groups": {
            "*": {
                "leaf": one_pod | unlimited,
                "root": one_pod | {"maxResources": four_cpu, "maxApplications": None, "limit": "*"},
            },
            "dev": {
                "root": unused | {"maxResources": four_cpu, "maxApplications": None, "limit": "#2"},
            },
        },
    }
