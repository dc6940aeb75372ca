"""A pod's user, groups and application, read from its annotations, labels and owners."""

from __future__ import annotations

import pytest

from elasticquota.core.userlimits.identity import (
    DEFAULT_USER,
    Identity,
    IdentityReading,
    application_id,
    identity_from_user_info,
    parse_user_info,
    read_identity,
    shared_application,
)

OURS = "elasticquota.dev/user-info"
YUNIKORN = "yunikorn.apache.org/user.info"


def test_the_annotation_gives_user_and_groups_in_order_without_repeats() -> None:
    reading = read_identity({OURS: '{"user": "sue", "groups": ["dev", "test", "dev", ""]}'})
    assert reading == IdentityReading(Identity("sue", ("dev", "test")), source=OURS)


def test_yunikorns_annotation_is_an_alias_and_ours_wins_when_both_are_set() -> None:
    alias = '{"user": "bob", "groups": ["ops"]}'
    assert read_identity({YUNIKORN: alias}).identity == Identity("bob", ("ops",))
    both = read_identity({YUNIKORN: alias, OURS: '{"user": "sue"}'})
    assert both == IdentityReading(Identity("sue"), source=OURS)


def test_no_annotation_means_the_default_user_without_groups() -> None:
    assert read_identity(None) == IdentityReading(Identity(DEFAULT_USER))
    assert DEFAULT_USER == "nobody"
    assert read_identity({}, default_user="anonymous").identity == Identity("anonymous")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("sue", "not JSON"),
        ('["sue"]', "expected a JSON object"),
        ('{"groups": ["dev"]}', '"user" must be a non-empty text'),
        ('{"user": "  "}', '"user" must be a non-empty text'),
        ('{"user": "sue", "groups": "dev"}', '"groups" must be a list of texts'),
        ('{"user": "sue", "groups": [1]}', '"groups" must be a list of texts'),
    ],
)
def test_an_unusable_annotation_counts_as_the_default_user_and_says_why(
    text: str, reason: str
) -> None:
    reading = read_identity({OURS: text, YUNIKORN: '{"user": "bob"}'})
    assert reading.identity == Identity(DEFAULT_USER)
    assert reading.source == ""
    assert reading.problem.startswith(f"annotation {OURS} ignored, counted as user nobody: ")
    assert reason in reading.problem
    with pytest.raises(ValueError, match=reason):
        parse_user_info(text)


def test_the_annotation_value_round_trips() -> None:
    identity = Identity("system:serviceaccount:ci:builder", ("system:serviceaccounts", "ci"))
    assert identity.annotation() == (
        '{"user":"system:serviceaccount:ci:builder","groups":["system:serviceaccounts","ci"]}'
    )
    assert parse_user_info(identity.annotation()) == identity


def test_identity_of_an_admission_requests_user_info() -> None:
    user_info = {"username": "sue", "uid": "1", "groups": ["dev", "system:authenticated"]}
    assert identity_from_user_info(user_info) == Identity("sue", ("dev", "system:authenticated"))
    assert identity_from_user_info({"groups": ["x"]}) is None
    assert identity_from_user_info(None) is None


def test_application_from_our_label_then_yunikorns_labels() -> None:
    assert application_id("ns", "p", {"elasticquota.dev/application": "sweep"}) == "ns/sweep"
    assert application_id("ns", "p", {"applicationId": "spark-1"}) == "ns/spark-1"
    assert application_id("ns", "p", {"yunikorn.apache.org/app-id": "a"}) == "ns/a"
    both = {"applicationId": "b", "elasticquota.dev/application": "a"}
    assert application_id("ns", "p", both) == "ns/a"


def test_application_from_the_controller_then_the_pod_itself() -> None:
    owners = [
        {"kind": "Node", "uid": "n-1"},
        {"kind": "ReplicaSet", "uid": "rs-1", "controller": True},
    ]
    assert application_id("ns", "p", {}, owners) == "ns/uid:rs-1"
    assert application_id("ns", "p", {"applicationId": ""}, [{"uid": "x"}]) == "ns/pod:p"


def test_only_a_label_or_a_controller_makes_an_application_pods_share() -> None:
    owners = [{"kind": "Job", "uid": "j-1", "controller": True}]
    assert shared_application("ns", {"applicationId": "spark-1"}) == "ns/spark-1"
    assert shared_application("ns", {}, owners) == "ns/uid:j-1"
    assert shared_application("ns", {"applicationId": ""}, [{"uid": "x"}]) is None


def test_the_same_label_in_two_namespaces_is_two_applications() -> None:
    labels = {"applicationId": "spark-1"}
    assert application_id("a", "p", labels) != application_id("b", "p", labels)
