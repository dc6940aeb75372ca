"""``plan`` with user and group limits: the seed's example end to end, ``users`` / ``groups`` in
the JSON contract, admission reasons naming the limit, problems for a broken annotation, and the
table's ``--users`` view."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from user_limit_cluster import SEED, seed_cluster

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import CliRunner, K8s, Writer


def test_the_seed_example_end_to_end_through_plan_json(
    k8s: type[K8s], write: Writer, plan_json: Callable[..., Any]
) -> None:
    document = plan_json(seed_cluster(k8s, write))
    assert document["problems"] == []
    users, groups = document["users"], document["groups"]
    assert users["sue"] == {
        "team": {
            "used": {"cpu": "4", "memory": "20Gi", "pods": "1"},
            "applications": 1,
            "maxResources": {"cpu": "5", "memory": "25Gi"},
            "maxApplications": None,
            "limit": "specific user",
        }
    }
    assert users["bob"]["team"]["limit"] == "user catch all"  # through the user wildcard
    assert users["bob"]["team"]["maxResources"] == {"cpu": "1", "memory": "10Gi"}
    # sue is in test and development: configuration order decides (development is listed first).
    assert groups["development"]["team"]["used"] == {"cpu": "4", "memory": "20Gi", "pods": "1"}
    assert groups["test"]["team"]["used"] == {}  # named, no usage: shown with its limit
    # bob (ops) and the interns go to the catch-all group: 5Gi + 4 x 10Gi.
    assert groups["*"]["team"]["used"] == {"cpu": "5", "memory": "45Gi", "pods": "5"}
    assert groups["*"]["team"]["limit"] == "group catch all"

    reasons = {entry["pod"]: entry for entry in document["admission"]}
    assert reasons["team/sue-2"]["reason"] == (
        "user sue at quota team: cpu: requested 2, used 4 of limit 5 (user limit specific user)"
    )
    assert reasons["team/bob-2"]["reason"] == (
        "user bob at quota team: cpu: requested 1, used 1 of limit 1 (user limit user catch all)"
    )
    assert reasons["team/intern-new"]["reason"] == (
        "group * at quota team: memory: requested 6Gi, used 45Gi of limit 50Gi "
        "(user limit group catch all)"
    )
    assert reasons["team/tess-1"]["admitted"]  # test has room; tess is within the user wildcard


def test_a_broken_limit_object_is_a_problem_and_the_rest_is_computed(
    k8s: type[K8s], write: Writer, plan_json: Callable[..., Any]
) -> None:
    broken = SEED + '- limit: "late"\n  users: ["amy"]\n  maxapplications: 1\n'
    document = plan_json(seed_cluster(k8s, write, broken))
    statement = (
        'quota team: user limit #5 "late": should not set no wildcard user '
        "'amy' after wildcard user limit"
    )
    told = f"{statement} (rule user-after-wildcard)"  # the Event's words: it has no rule field
    assert [(p["object"], p["source"], p["rule"], p["message"]) for p in document["problems"]] == [
        ("ElasticQuota team/team", "operator", "operator", told),
        # and the webhook would refuse it, with the same words (its rule in a field of its own)
        ("ElasticQuota team/team", "webhook", "user-limits:user-after-wildcard", statement),
    ]
    assert document["users"]["sue"]["team"]["limit"] == "specific user"  # the others hold
    assert "amy" not in document["users"]
    assert document["quotas"]["team"]["used"]["cpu"] == "9"


def test_the_users_view_of_the_table(k8s: type[K8s], write: Writer, run_cli: CliRunner) -> None:
    result = run_cli("plan", "-f", seed_cluster(k8s, write), "--users")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["USER", "/", "GROUP", "QUOTA", "LIMIT", "APPS", "USED", "/", "MAX"]
    assert (
        "user sue             team                   specific user         1  cpu 4/5, memory "
        "20Gi/25Gi" in lines
    )
    assert (
        "group test           team                   specific groups       0  cpu 0/10, memory "
        "0/100Gi" in lines
    )
    assert "Pending pods:" in lines
    assert any(
        "wait  team/sue-2 (team): user sue at quota team: cpu: requested 2" in line
        for line in lines
    )


def test_a_lowered_limit_shows_over_use_in_the_users_view(
    k8s: type[K8s], write: Writer, run_cli: CliRunner
) -> None:
    lowered = SEED.replace("{memory: 25Gi, vcore: 5}", "{memory: 25Gi, vcore: 3}")
    out = run_cli("plan", "-f", seed_cluster(k8s, write, lowered), "--users").out
    assert "cpu 4/3!" in out
    assert "Over a user or group limit (new pods that need more wait, none evicted):" in out
    assert "user sue at quota team is over its cpu limit: used 4, limit 3" in out


def test_the_trees_table_names_the_limit_that_holds_a_pod(
    k8s: type[K8s], write: Writer, run_cli: CliRunner
) -> None:
    out = run_cli("plan", "-f", seed_cluster(k8s, write)).out
    assert "wait  team/bob-2 (team): user bob at quota team: cpu: requested 1, used 1 of" in out
