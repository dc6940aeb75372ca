"""Accounting per user and tracked group, and admission, rule by rule: hierarchical usage,
running applications, the resources checked, lowered limits, the verdict's refusals and the
usage document.

cpu is in millicores, memory in bytes (engine units). Paths run from the pod's quota to the root.
"""

from __future__ import annotations

from userlimits_ledger_helpers import MI, book_of, pod, refused_on, start

from elasticquota.core.userlimits import APPLICATIONS, LimitedPod, LimitRefusal, UserLimitLedger

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
        "lowered); pods of new applications are held back, none is evicted",
        "user sue at quota q is over its cpu limit: used 3, limit 2 (user limit lowered); "
        "new pods requesting cpu are held back, none is evicted",
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
