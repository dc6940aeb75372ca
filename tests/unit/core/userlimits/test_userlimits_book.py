"""A tree's limits: rules between levels, the limit in force, tracked groups.

Trees are written as ``{quota: (parent, annotation)}``; paths run from the leaf to the root.
"""

from __future__ import annotations

from userlimits_examples import SEED

from elasticquota.core.userlimits import (
    WILDCARD,
    LimitBook,
    QuotaLimitSource,
    build_book,
    change_problems,
)

Tree = dict[str, tuple[str | None, str]]


def book_of(tree: Tree, maxes: dict[str, dict[str, int]] | None = None) -> tuple[LimitBook, list]:
    sources = [
        QuotaLimitSource(name, parent, text, (maxes or {}).get(name, {}))
        for name, (parent, text) in tree.items()
    ]
    return build_book(sources)


def rules_of(tree: Tree) -> list[tuple[str, str, str]]:
    _, problems = book_of(tree)
    return [(problem.quota, problem.limit, problem.rule) for problem in problems]


def test_seed_example_sue_development_test_and_the_catch_alls() -> None:
    book, problems = book_of({"team": (None, SEED)})
    assert problems == []
    # sue has her own limit; every other user the catch-all.
    sue, through = book.user_limit("team", "sue")
    assert (sue.max_resources, through) == ({"memory": 25 * 10**9, "cpu": 5000}, False)
    bob, through = book.user_limit("team", "bob")
    assert (bob.max_resources, through) == ({"memory": 10 * 10**9, "cpu": 1000}, True)
    # Members of development or test are tracked under that group (configuration order decides);
    # everyone else with groups counts towards the cumulative catch-all group.
    assert book.tracked_group(("team",), ["test", "development"]) == "development"
    assert book.tracked_group(("team",), ["test"]) == "test"
    assert book.tracked_group(("team",), ["ops", "interns"]) == WILDCARD
    assert book.tracked_group(("team",), []) is None  # no groups: no group, even with a wildcard
    dev = book.group_limit("team", "development")
    assert dev is not None and dev.max_resources == {"memory": 100 * 10**9, "cpu": 10_000}
    assert book.group_limit("team", "test") is dev  # each named group gets its own copy of it
    catch_all = book.group_limit("team", WILDCARD)
    assert catch_all is not None and catch_all.max_resources["memory"] == 50 * 10**9
    # A named group never falls back on the wildcard at run time.
    assert book.group_limit("team", "ops") is None


def test_the_nearest_level_wins_and_a_lower_group_wildcard_hides_named_groups_above() -> None:
    book, problems = book_of(
        {
            "root": (None, "- groups: [dev, ops]\n  maxapplications: 10"),
            "mid": (
                "root",
                '- groups: [test]\n  maxapplications: 5\n- groups: ["*"]\n  maxapplications: 2',
            ),
            "leaf": ("mid", "- groups: [ops]\n  maxapplications: 3"),
            "other": ("root", ""),
        }
    )
    assert problems == []
    path = ("leaf", "mid", "root")
    assert book.tracked_group(path, ["ops", "test"]) == "ops"  # matched at the leaf
    assert book.tracked_group(path, ["test", "dev"]) == "test"  # at mid, before dev at root
    assert book.tracked_group(path, ["dev"]) == WILDCARD  # mid's wildcard hides root's dev
    assert book.tracked_group(("other", "root"), ["dev"]) == "dev"
    assert book.tracked_group(("other", "root"), ["nobody-knows"]) is None
    # ops is tracked at the leaf; at mid it has no limit (no fallback on mid's wildcard).
    assert book.group_limit("mid", "ops") is None
    ops_root = book.group_limit("root", "ops")
    assert ops_root is not None and ops_root.max_applications == 10


def test_levels_are_independent_a_limit_applies_only_where_it_is_written() -> None:
    book, _ = book_of(
        {
            "root": (None, "- users: [sue]\n  maxapplications: 4"),
            "leaf": ("root", '- users: ["*"]\n  maxresources: {cpu: 2}'),
        }
    )
    at_root, _ = book.user_limit("root", "sue")
    assert at_root is not None and at_root.max_applications == 4
    at_leaf, through = book.user_limit("leaf", "sue")
    assert at_leaf is not None and through and at_leaf.max_applications == 0
    assert book.user_limit("root", "bob") == (None, False)
    assert book.user_limit("unknown-quota", "bob") == (None, False)


def test_user_wildcards_never_apply_to_groups() -> None:
    book, _ = book_of({"q": (None, '- users: ["*"]\n  maxapplications: 1')})
    assert book.group_limit("q", WILDCARD) is None
    assert book.tracked_group(("q",), ["dev"]) is None


def test_rule_11_a_lower_limit_for_the_same_name_must_fit_in_the_one_above() -> None:
    tree: Tree = {
        "root": (None, "- users: [sue]\n  maxresources: {cpu: 10, memory: 1Gi}"),
        "a": ("root", "- users: [sue]\n  maxresources: {cpu: 10}"),  # fits: equal, memory unset
        "b": ("root", "- users: [sue]\n  maxresources: {cpu: 11}"),  # cpu too big
        "c": ("root", "- groups: [sue]\n  maxresources: {cpu: 99}"),  # a group: another name
    }
    book, problems = book_of(tree)
    assert [(p.quota, p.rule) for p in problems] == [("b", "exceeds-ancestor-limit")]
    assert "user sue maxresources cpu 11 > 10" in problems[0].detail
    assert book.at("b") is None  # the only object of b is dropped
    assert book.at("a") is not None and book.at("c") is not None


def test_rule_11_the_minimum_of_both_is_carried_further_down() -> None:
    tree: Tree = {
        "root": (None, "- users: [sue]\n  maxresources: {cpu: 10, memory: 4Gi}"),
        "mid": ("root", "- users: [sue]\n  maxresources: {cpu: 6, nvidia.com/gpu: 2}"),
        "leaf": ("mid", "- users: [sue]\n  maxresources: {memory: 5Gi, nvidia.com/gpu: 2}"),
        "leaf2": ("mid", "- users: [sue]\n  maxresources: {cpu: 7}"),
    }
    assert rules_of(tree) == [
        ("leaf", "#1", "exceeds-ancestor-limit"),
        ("leaf2", "#1", "exceeds-ancestor-limit"),
    ]


def test_rule_11_limits_are_carried_through_levels_that_set_nothing() -> None:
    tree: Tree = {
        "root": (None, "- users: [sue]\n  maxresources: {cpu: 4}\n  maxapplications: 2"),
        "mid": ("root", "- users: [bob]\n  maxapplications: 9"),  # says nothing about sue
        "empty": ("mid", ""),
        "leaf": ("empty", "- users: [sue]\n  maxresources: {cpu: 5}\n  maxapplications: 2"),
        "leaf2": ("empty", "- users: [sue]\n  maxresources: {cpu: 4}\n  maxapplications: 3"),
    }
    assert rules_of(tree) == [
        ("leaf", "#1", "exceeds-ancestor-limit"),
        ("leaf2", "#1", "exceeds-ancestor-applications"),
    ]


def test_rule_12_a_named_entry_must_fit_in_an_ancestors_wildcard() -> None:
    tree: Tree = {
        "root": (None, '- users: ["*"]\n  maxresources: {cpu: 50}'),
        "ok": ("root", "- users: [sue]\n  maxresources: {cpu: 50}"),
        "big": ("root", "- users: [sue]\n  maxresources: {cpu: 70}"),
        "wild": ("root", '- users: ["*"]\n  maxresources: {cpu: 60}'),  # rule 11 for "*"
    }
    assert rules_of(tree) == [
        ("big", "#1", "exceeds-ancestor-wildcard"),
        ("wild", "#1", "exceeds-ancestor-limit"),
    ]


def test_rule_12_the_same_name_above_takes_precedence_over_the_wildcard_above() -> None:
    tree: Tree = {
        "root": (
            None,
            '- users: [sue]\n  maxresources: {cpu: 80}\n- users: ["*"]\n  maxresources: {cpu: 10}',
        ),
        "leaf": ("root", "- users: [sue]\n  maxresources: {cpu: 70}"),
    }
    assert rules_of(tree) == []


def test_rule_13_once_applications_are_limited_above_every_lower_object_must_limit_them() -> None:
    tree: Tree = {
        "root": (
            None,
            '- groups: [dev]\n  maxapplications: 5\n- users: ["*"]\n  maxapplications: 3',
        ),
        "a": ("root", "- groups: [dev]\n  maxapplications: 5"),
        "b": ("root", "- groups: [dev]\n  maxapplications: 6"),
        "c": ("root", "- groups: [dev]\n  maxresources: {cpu: 1}"),  # 0 = unlimited: too much
        "d": ("root", "- users: [sue]\n  maxresources: {cpu: 1}"),  # against root's wildcard
        "e": ("root", "- users: [sue]\n  maxresources: {cpu: 1}\n  maxapplications: 3"),
    }
    assert rules_of(tree) == [
        ("b", "#1", "exceeds-ancestor-applications"),
        ("c", "#1", "exceeds-ancestor-applications"),
        ("d", "#1", "exceeds-ancestor-applications"),
    ]


def test_rule_13_unlimited_applications_above_allow_anything_below() -> None:
    tree: Tree = {
        "root": (None, "- users: [sue]\n  maxresources: {cpu: 4}"),
        "leaf": ("root", "- users: [sue]\n  maxresources: {cpu: 2}\n  maxapplications: 7"),
        "deeper": ("leaf", "- users: [sue]\n  maxresources: {cpu: 1}\n  maxapplications: 8"),
    }
    # The 7 set at leaf is carried (min with 0 read as unlimited), so deeper's 8 is refused.
    assert rules_of(tree) == [("deeper", "#1", "exceeds-ancestor-applications")]


def test_rule_14_siblings_are_independent() -> None:
    tree: Tree = {
        "root": (None, ""),
        "a": ("root", "- users: [sue]\n  maxresources: {cpu: 1}"),
        "b": ("root", "- users: [sue]\n  maxresources: {cpu: 100}"),
        "b1": ("b", "- users: [sue]\n  maxresources: {cpu: 50}"),
    }
    assert rules_of(tree) == []


def test_a_dropped_ancestor_object_is_not_carried() -> None:
    tree: Tree = {
        "root": (None, "- users: [sue]\n  maxresources: {cpu: 1}\n  maxapplications: -1"),
        "leaf": ("root", "- users: [sue]\n  maxresources: {cpu: 5}"),
    }
    assert rules_of(tree) == [("root", "#1", "invalid-maxapplications")]


def test_each_quota_is_checked_with_its_own_max() -> None:
    _, problems = book_of(
        {
            "root": (None, "- users: [sue]\n  maxresources: {cpu: 20}"),
            "leaf": ("root", "- users: [bob]\n  maxresources: {cpu: 20}"),
        },
        maxes={"root": {"cpu": 100_000}, "leaf": {"cpu": 10_000}},
    )
    assert [(p.quota, p.rule) for p in problems] == [("leaf", "exceeds-quota-max")]


def test_a_parent_cycle_or_an_unknown_parent_does_not_stop_the_checks() -> None:
    tree: Tree = {
        "x": ("y", "- users: [sue]\n  maxapplications: 3"),
        "y": ("x", "- users: [sue]\n  maxapplications: 2"),
        "orphan": ("missing", "- users: [sue]\n  maxapplications: 3"),
    }
    book, problems = book_of(tree)
    assert book.at("orphan") is not None
    # The cycle is cut somewhere: one of x and y is checked under the other.
    assert [(p.quota, p.rule) for p in problems] == [("x", "exceeds-ancestor-applications")]


def test_a_change_is_blamed_only_for_the_problems_it_brings() -> None:
    before = [
        QuotaLimitSource("root", None, "- users: [sue]\n  maxresources: {cpu: 10}"),
        QuotaLimitSource("leaf", "root", "- users: [sue]\n  maxresources: {cpu: 8}"),
        QuotaLimitSource("old", "root", "- users: [bob]\n  maxapplications: -1"),  # already bad
    ]
    assert change_problems(before, before) == []
    # Lowering the parent's limit below the child's is the parent update's problem.
    lowered = [
        QuotaLimitSource("root", None, "- users: [sue]\n  maxresources: {cpu: 5}"),
        *before[1:],
    ]
    assert [(p.quota, p.rule) for p in change_problems(before, lowered)] == [
        ("leaf", "exceeds-ancestor-limit")
    ]
    # A new broken annotation on the leaf; the unrelated old problem is not reported.
    broken = [
        before[0],
        QuotaLimitSource("leaf", "root", '- groups: ["*"]\n  maxapplications: 1'),
        before[2],
    ]
    assert [(p.quota, p.rule) for p in change_problems(before, broken)] == [
        ("leaf", "lone-group-wildcard")
    ]
    # A lowered spec.max under an existing limit (rule 10).
    smaller = [
        before[0],
        QuotaLimitSource("leaf", "root", before[1].text, {"cpu": 4_000}),
        before[2],
    ]
    assert [(p.quota, p.rule) for p in change_problems(before, smaller)] == [
        ("leaf", "exceeds-quota-max")
    ]


def test_a_group_wildcard_left_alone_by_a_dropped_named_group_limit_is_dropped_too() -> None:
    """Found by the survivors property: the named group object before the wildcard breaks the
    ancestor's limit and is dropped; the wildcard is then alone (rule 5) and dropped as well."""
    tree: Tree = {
        "root": (None, "- groups: [g1]\n  maxresources: {cpu: 1}"),
        "b": (
            "root",
            '- groups: [g1]\n  maxresources: {cpu: 2}\n- groups: ["*"]\n  maxapplications: 1',
        ),
    }
    assert rules_of(tree) == [
        ("b", "#1", "exceeds-ancestor-limit"),
        ("b", "#2", "lone-group-wildcard"),
    ]
    book, _ = book_of(tree)
    assert book.at("b") is None
