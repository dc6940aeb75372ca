"""``explain`` for a pod held back by a user or group limit: which limit (whose, the limit
object's name, the quota, the resource or applications) and what would let the pod start, with
the numbers."""

from __future__ import annotations

from test_userlimits_admission import pod, quota, solve, two_levels

from elasticquota.core.decisions.explain import explain

SUE_CPU = '- limit: "specific user"\n  users: [sue]\n  maxresources: {cpu: 5}'


def test_a_resource_limit_names_the_user_the_limit_and_the_usage_to_drop_to() -> None:
    snapshot = solve(
        two_levels(leaf=SUE_CPU),
        [pod("a", cpu=4_000), pod("new", cpu=2_000, state="gated")],
    )
    found = explain(snapshot, "ns/new")
    assert found.verdict == (
        "waits: user sue at quota leaf: cpu: requested 2, used 4 of limit 5 "
        "(user limit specific user)"
    )
    assert found.held_by == ["user sue: limit 'specific user' at quota leaf (resource cpu)"]
    assert found.advice == [
        "user sue has 4 of 5 cpu at quota leaf (limit 'specific user'); the pod requests 2: it "
        "starts when user sue's usage there drops to 3 or less (pods counted for user sue at "
        "leaf or below finishing), or the limit is raised to 6"
    ]
    text = found.render()
    assert "held by: user sue: limit 'specific user' at quota leaf (resource cpu)\n" in text
    assert "to fit: user sue has 4 of 5 cpu at quota leaf" in text


def test_an_applications_limit_at_an_ancestor_says_one_must_stop() -> None:
    snapshot = solve(
        two_levels(root='- limit: "sue at root"\n  users: [sue]\n  maxapplications: 2'),
        [pod("a", app="ns/x"), pod("b", app="ns/y"), pod("new", app="ns/z", state="gated")],
    )
    found = explain(snapshot, "ns/new")
    assert found.held_by == ["user sue: limit 'sue at root' at quota root (applications)"]
    assert found.advice == [
        "user sue runs 2 of 2 applications at quota root (limit 'sue at root') and this pod "
        "starts a new one; it starts when one of them stops (all its pods finish), or the "
        "limit's maxapplications is raised to 3"
    ]


def test_an_applications_limit_lowered_below_the_running_ones_says_how_many_must_stop() -> None:
    """sue runs 3 applications and her limit was lowered to 2: one stopping is not enough."""
    snapshot = solve(
        two_levels(leaf='- limit: "sue"\n  users: [sue]\n  maxapplications: 2'),
        [
            *(pod(name, app=f"ns/{name}") for name in ("x", "y", "w")),
            pod("new", app="ns/z", state="gated"),
        ],
    )
    (advice,) = explain(snapshot, "ns/new").advice
    assert advice == (
        "user sue runs 3 of 2 applications at quota leaf (limit 'sue') and this pod starts a new "
        "one; it starts when 2 of them stop (all their pods finish), or the limit's "
        "maxapplications is raised to 4"
    )


def test_a_group_limit_names_the_group_and_the_pods_user() -> None:
    limits = '- limit: "devs"\n  groups: [dev]\n  maxresources: {cpu: 3}'
    snapshot = solve(
        two_levels(leaf=limits),
        [
            pod("a", cpu=2_000, user="amy", groups=("dev",)),
            pod("new", cpu=1_500, user="sue", groups=("dev",), state="gated"),
        ],
    )
    found = explain(snapshot, "ns/new")
    assert found.held_by == [
        "group dev (the group user sue's pods are tracked under here): limit 'devs' at quota "
        "leaf (resource cpu)"
    ]
    (advice,) = found.advice
    assert advice.startswith("group dev (the group user sue's pods are tracked under here) has 2 ")
    assert "group dev's usage there drops to 1500m or less" in advice
    assert advice.endswith("or the limit is raised to 3500m")


def test_a_pod_asking_more_than_the_limit_itself_needs_the_limit_raised() -> None:
    snapshot = solve(two_levels(leaf=SUE_CPU), [pod("huge", cpu=6_000, state="gated")])
    found = explain(snapshot, "ns/huge")
    assert found.advice == [
        "user sue has 0 of 5 cpu at quota leaf (limit 'specific user'); the pod alone requests "
        "6 cpu, more than the limit: it starts only when the limit is raised to 6 or more"
    ]


def test_a_pod_held_by_a_quota_and_a_limit_gets_both_pieces_of_advice() -> None:
    limits = SUE_CPU.replace("cpu: 5", "cpu: 4")  # within the quota's max (rule 10)
    quotas = [quota("root", is_parent=True), quota("leaf", "root", limits, cpu=4_500)]
    snapshot = solve(quotas, [pod("a", cpu=4_000), pod("new", cpu=2_000, state="gated")])
    found = explain(snapshot, "ns/new")
    assert snapshot.problems == []
    assert len(found.advice) == 2
    assert found.advice[0].startswith("quota leaf needs 1500m more cpu")
    assert found.advice[1].startswith("user sue has 4 of 4 cpu at quota leaf")
    assert found.held_by == ["user sue: limit 'specific user' at quota leaf (resource cpu)"]


def test_a_pod_held_by_its_quota_only_has_no_held_by_line() -> None:
    limits = SUE_CPU.replace("cpu: 5", "cpu: 4")
    quotas = [quota("root", is_parent=True), quota("leaf", "root", limits, cpu=4_500)]
    snapshot = solve(
        quotas, [pod("a", cpu=3_000, user="bob"), pod("new", cpu=2_000, state="gated")]
    )
    found = explain(snapshot, "ns/new")
    assert found.held_by == []
    assert "held by:" not in found.render()
