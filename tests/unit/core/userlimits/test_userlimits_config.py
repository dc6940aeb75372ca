"""The user-limits annotation of one quota: reading it and YuniKorn's per-quota rules.

Each rule has a worked example; rule ids are asserted so that a message may be reworded freely.
"""

from __future__ import annotations

import json

import pytest

from elasticquota.core.userlimits import (
    WILDCARD,
    LimitEntry,
    LimitProblem,
    QuotaLimits,
    load_limit_objects,
    parse_quota_limits,
)

GI = 1024**3


def parse(text: str, quota_max: dict[str, int] | None = None) -> tuple[QuotaLimits, list[str]]:
    limits, problems = parse_quota_limits("team", text, quota_max)
    return limits, [problem.rule for problem in problems]


def test_a_yunikorn_object_is_read_with_kubernetes_units_and_vcore_as_cpu() -> None:
    limits, rules = parse(
        """
        - limit: "specific user"
          users: ["sue", "bob"]
          maxresources: {vcore: 5, memory: 25Gi, nvidia.com/gpu: 2}
          maxapplications: 2
        """
    )
    assert rules == []
    (entry,) = limits.entries
    assert entry == LimitEntry(
        index=0,
        description="specific user",
        users=("sue", "bob"),
        max_resources={"cpu": 5000, "memory": 25 * GI, "nvidia.com/gpu": 2},
        max_applications=2,
    )
    # One object applies to each name separately (one copy per name, never a shared budget).
    assert limits.user_limit("sue") == (entry, False)
    assert limits.user_limit("bob") == (entry, False)
    assert limits.user_limit("carol") == (None, False)


def test_json_and_a_pasted_limits_mapping_are_read_too() -> None:
    as_json = json.dumps([{"users": ["sue"], "maxresources": {"cpu": "500m"}}])
    pasted = "limits:\n  - users: [sue]\n    maxresources: {cpu: 500m}\n"
    for text in (as_json, pasted):
        limits, rules = parse(text)
        assert rules == []
        assert limits.users["sue"].max_resources == {"cpu": 500}


def test_absent_blank_and_empty_annotations_mean_no_limits() -> None:
    for text in (None, "", "  \n", "[]", "limits: []", "null"):
        limits, problems = parse_quota_limits("team", text)
        assert problems == []
        assert limits.entries == ()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("users: [sue]", "expected a list of limit objects, got a mapping"),
        ('"sue"', "expected a list of limit objects, got a text"),
        ("- users: [sue\n", "not valid YAML or JSON"),
        ("- users: [*]", "a wildcard must be quoted"),
        ("- &a {users: [sue], maxapplications: 1}\n- *a", "not valid YAML or JSON"),
    ],
)
def test_a_text_that_is_not_a_list_of_objects_is_one_problem_and_no_limits(
    text: str, reason: str
) -> None:
    limits, problems = parse_quota_limits("team", text)
    assert limits.entries == ()
    (problem,) = problems
    assert problem.rule == "syntax"
    assert reason in problem.detail
    assert problem.message.startswith("quota team: user limits: ")


def test_an_oversized_annotation_is_refused_before_parsing() -> None:
    with pytest.raises(ValueError, match="longer than"):
        load_limit_objects("[" + " " * 300_000 + "]")


def test_deeply_nested_text_is_a_problem_not_a_crash() -> None:
    for text in ("[" * 100_000, "- " * 50_000 + "x"):
        _, problems = parse_quota_limits("team", text)
        assert [problem.rule for problem in problems] == ["syntax"]


def test_a_problem_names_the_quota_the_object_and_the_rule() -> None:
    _, problems = parse_quota_limits(
        "team", '- limit: "interns"\n  users: [sue]\n  maxresources: {cpu: -1}\n'
    )
    assert problems == [
        LimitProblem(
            "team",
            '#1 "interns"',
            "negative-maxresources",
            "MaxResources should be greater than zero: cpu is negative",
        )
    ]
    assert problems[0].message == (
        'quota team: user limit #1 "interns": MaxResources should be greater than zero: '
        "cpu is negative (rule negative-maxresources)"
    )


def test_one_bad_object_drops_only_itself() -> None:
    limits, rules = parse(
        """
        - users: [sue]
          maxapplications: 1
        - users: [bob]
          maxresources: {cpu: lots}
        - groups: [dev]
          maxapplications: 3
        """
    )
    assert rules == ["invalid-maxresources"]
    assert [entry.index for entry in limits.entries] == [0, 2]
    assert set(limits.users) == {"sue"}
    assert limits.group_order == ("dev",)


def test_a_non_mapping_object_and_unknown_keys_are_refused_with_hints() -> None:
    limits, problems = parse_quota_limits(
        "team",
        """
        - sue
        - users: [sue]
          maxResources: {cpu: 1}
        - users: [bob]
          maxapplications: 1
          color: blue
        """,
    )
    assert [(p.limit, p.rule) for p in problems] == [
        ("#1", "not-an-object"),
        ("#2", "unknown-key"),
        ("#2", "no-limit-values"),  # the misspelt key is not read
        ("#3", "unknown-key"),
    ]
    assert "did you mean 'maxresources'?" in problems[1].detail
    assert "known keys: limit, users, groups, maxresources, maxapplications" in problems[3].detail
    assert limits.entries == ()


def test_rule_1_an_object_needs_a_user_or_a_group() -> None:
    _, rules = parse("- maxapplications: 1\n- users: []\n  groups: []\n  maxapplications: 1")
    assert rules == ["empty-users-and-groups", "empty-users-and-groups"]


@pytest.mark.parametrize(
    "name",
    [
        "sue",
        "_svc",
        "system:serviceaccount:ns:builder",
        "sue@example.com",
        "a.b-c_d",
        "machine$",
        "dom#team/sue",
    ],
)
def test_rule_2_valid_user_names(name: str) -> None:
    limits, rules = parse(json.dumps([{"users": [name], "maxapplications": 1}]))
    assert rules == []
    assert name in limits.users


@pytest.mark.parametrize("name", ["", "1sue", "sue smith", "sue$x", "-sue", "sü", "(sue)"])
def test_rule_2_invalid_user_names(name: str) -> None:
    _, rules = parse(json.dumps([{"users": [name], "maxapplications": 1}]))
    assert rules == ["invalid-user-name"]


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("dev", True),
        ("dev.team:a_b-c", True),
        ("_x", True),
        ("dev@corp", False),
        ("dev$", False),
        ("dev/x", False),
        ("", False),
        ("9dev", False),
    ],
)
def test_rule_2_group_names(name: str, valid: bool) -> None:
    _, rules = parse(json.dumps([{"groups": [name], "maxapplications": 1}]))
    assert rules == ([] if valid else ["invalid-group-name"])


def test_names_must_be_lists_of_texts() -> None:
    _, rules = parse("- users: sue\n  maxapplications: 1\n- groups: [1]\n  maxapplications: 1")
    assert rules == ["invalid-users", "invalid-groups"]


def test_rule_3_a_name_twice_in_one_quota_is_refused_even_across_objects() -> None:
    _, rules = parse(
        """
        - users: [sue, sue]
          maxapplications: 1
        - users: [bob]
          maxapplications: 1
        - users: [bob]
          maxapplications: 2
        - groups: [dev, "*", "*"]
          maxapplications: 2
        """
    )
    assert rules == ["duplicate-user", "duplicate-user", "duplicate-group"]


def test_rule_3_the_same_name_as_user_and_as_group_is_fine() -> None:
    _, rules = parse("- users: [dev]\n  groups: [dev]\n  maxapplications: 1")
    assert rules == []


def test_rule_4_the_wildcard_may_end_a_list_but_nothing_named_may_follow_it() -> None:
    limits, rules = parse('- users: [sue, "*"]\n  maxapplications: 1')
    assert rules == []
    assert limits.users["sue"] is limits.user_wildcard
    _, rules = parse('- users: ["*", sue]\n  maxapplications: 1')
    assert rules == ["user-after-wildcard"]
    _, rules = parse(
        """
        - users: ["*"]
          maxapplications: 1
        - users: [sue]
          maxapplications: 2
        - groups: [dev, "*"]
          maxapplications: 1
        - groups: [test]
          maxapplications: 1
        """
    )
    assert rules == ["user-after-wildcard", "group-after-wildcard"]


def test_rule_5_a_group_wildcard_needs_a_named_group_before_it() -> None:
    _, rules = parse('- groups: ["*"]\n  maxapplications: 1')
    assert rules == ["lone-group-wildcard"]
    # Beside a named group in the same object, or after one, it is fine.
    _, rules = parse('- groups: [dev, "*"]\n  maxapplications: 1')
    assert rules == []
    limits, rules = parse(
        '- groups: [dev]\n  maxapplications: 4\n- groups: ["*"]\n  maxapplications: 1'
    )
    assert rules == []
    assert limits.group_wildcard is not None
    assert limits.group_limit(WILDCARD) is limits.group_wildcard
    # A user wildcard has no such rule.
    _, rules = parse('- users: ["*"]\n  maxapplications: 1')
    assert rules == []


def test_rule_5_a_dropped_named_group_does_not_count() -> None:
    _, rules = parse(
        '- groups: [dev]\n  maxapplications: -1\n- groups: ["*"]\n  maxapplications: 1'
    )
    assert rules == ["invalid-maxapplications", "lone-group-wildcard"]


@pytest.mark.parametrize(
    ("resources", "rule"),
    [
        ({"cpu": "-1"}, "negative-maxresources"),
        ({"cpu": "4", "memory": "-1Gi"}, "negative-maxresources"),
        ({"cpu": 0, "memory": "0"}, "zero-maxresources"),
        ({"cpu": "four"}, "invalid-maxresources"),
        ({"cpu": True}, "invalid-maxresources"),
        ({"cpu": 1, "vcore": 1}, "invalid-maxresources"),
    ],
)
def test_rule_6_maxresources_must_parse_be_positive_somewhere_and_never_negative(
    resources: dict[str, object], rule: str
) -> None:
    _, rules = parse(json.dumps([{"users": ["sue"], "maxresources": resources}]))
    assert rules == [rule]


def test_rule_6_a_listed_zero_beside_a_positive_value_means_none_of_it() -> None:
    limits, rules = parse("- users: [sue]\n  maxresources: {cpu: 2, nvidia.com/gpu: 0}")
    assert rules == []
    assert limits.users["sue"].max_resources == {"cpu": 2000, "nvidia.com/gpu": 0}


def test_rule_6_maxresources_must_be_a_mapping() -> None:
    _, rules = parse("- users: [sue]\n  maxresources: [cpu]")
    assert rules == ["invalid-maxresources"]


@pytest.mark.parametrize("value", ["-1", "1.5", '"2"', "true"])
def test_rule_7_maxapplications_is_an_unsigned_integer(value: str) -> None:
    _, rules = parse(f"- users: [sue]\n  maxresources: {{cpu: 1}}\n  maxapplications: {value}")
    assert rules == ["invalid-maxapplications"]


def test_rule_8_an_object_must_limit_something_but_maxapplications_0_with_resources_is_fine() -> (
    None
):
    _, rules = parse("- users: [sue]\n- users: [bob]\n  maxapplications: 0\n  maxresources: {}")
    assert rules == ["no-limit-values", "no-limit-values"]
    limits, rules = parse("- users: [sue]\n  maxapplications: 0\n  maxresources: {cpu: 1}")
    assert rules == []
    assert limits.users["sue"].max_applications == 0  # 0: no limit on applications


def test_rule_10_maxresources_must_fit_in_the_quotas_own_max_on_the_resources_it_lists() -> None:
    quota_max = {"cpu": 10_000, "memory": 64 * GI}
    _, rules = parse("- users: [sue]\n  maxresources: {cpu: 10, memory: 64Gi, gpu: 99}", quota_max)
    assert rules == []  # exactly the max fits; a resource the max does not list is unbounded
    _, problems = parse_quota_limits("team", "- users: [sue]\n  maxresources: {cpu: 11}", quota_max)
    assert [p.rule for p in problems] == ["exceeds-quota-max"]
    assert "cpu 11 > 10" in problems[0].detail
    # No max known (a tree root without one): nothing to compare with.
    _, rules = parse("- users: [sue]\n  maxresources: {cpu: 11}")
    assert rules == []


def test_every_independent_rule_of_one_object_is_reported() -> None:
    _, rules = parse('- users: ["*", "1x"]\n  maxresources: {cpu: -1}\n  maxapplications: -2')
    assert rules == [
        "invalid-user-name",
        "user-after-wildcard",
        "negative-maxresources",
        "invalid-maxapplications",
    ]


def test_a_named_user_replaces_the_wildcard_entirely() -> None:
    limits, _ = parse(
        '- users: [sue]\n  maxapplications: 3\n- users: ["*"]\n  maxresources: {cpu: 1}'
    )
    entry, through = limits.user_limit("sue")
    assert (entry.max_resources, entry.max_applications, through) == ({}, 3, False)
    entry, through = limits.user_limit("bob")
    assert entry is limits.user_wildcard and through


def test_labels_and_report_names() -> None:
    limits, _ = parse(
        '- users: [sue]\n  maxapplications: 3\n- limit: all\n  users: ["*"]\n  maxapplications: 1'
    )
    first, second = limits.entries
    assert (first.label, second.label) == ("#1", '#2 "all"')
    assert first.report_name(through_wildcard=False) == "#1"
    assert second.report_name(through_wildcard=True) == "all"
    unnamed_wildcard = LimitEntry(index=4, users=(WILDCARD,), max_applications=1)
    assert unnamed_wildcard.report_name(through_wildcard=True) == "*"
