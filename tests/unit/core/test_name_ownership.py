"""Quota names are global: who owns a name several quotas share, and what happens to the others.

A newcomer never takes a name (nor its pods) from a quota that exists: the owner is the quota the
operator recorded (``elasticquota.dev/name-owner``), else the one that owned it before, else the
oldest (creation time, then uid). On a creation-time tie both quotas are told about the other.
Orphans (a parent deleted or no longer ``is-parent``) are left out and say where their pods count.
"""

from __future__ import annotations

from dataclasses import replace

from engine_factories import BIG, node, pod, quota

from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.model.models import Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.kernels import reference

SECOND = "2026-11-25T10:00:00Z"
LATER = "2026-11-25T10:00:05Z"
# The newcomer wins every tie-break that ignores history: its namespace and uid sort first.
OWNER_UID, NEWCOMER_UID = "f0000000-0000-0000-0000-000000000000", "0a000000-0000-0000-0000-0000"


def engine() -> QuotaEngine:
    return QuotaEngine(EngineSettings(), solver=reference.solve_tree)


def l2(namespace: str, uid: str, created: str = SECOND, record: str = "") -> Quota:
    spec = quota("l2", max={"cpu": 40}, namespace=namespace, created=created)
    return replace(spec, uid=uid, name_record=record)


def problems_of(snapshot: Snapshot, ref: str) -> list[Problem]:
    return [problem for problem in snapshot.problems if problem.object == ref]


def test_a_newcomer_of_the_same_second_does_not_take_the_name_nor_the_pods() -> None:
    eq = engine().load([l2("base", OWNER_UID)], [pod("worker", "l2", cpu=3)], [node("n", cpu=9)])
    assert eq.solve().quotas["l2"].namespace == "base"

    eq.upsert_quota(l2("bad", NEWCOMER_UID))
    snapshot = eq.solve()

    assert snapshot.quotas["l2"].namespace == "base"
    assert snapshot.pod_quota["team/worker"] == "l2"
    assert snapshot.quotas["l2"].request == {"cpu": 3}
    [newcomer] = problems_of(snapshot, "ElasticQuota bad/l2")
    assert newcomer.left_out
    assert newcomer.message == (
        "quota name 'l2' is already used by ElasticQuota base/l2 (both were created at "
        f"{SECOND}: the name stays with the quota that holds it, else with the lower uid); "
        "quota names must be unique across namespaces; the quota is left out of its tree"
    )
    [owner] = problems_of(snapshot, "ElasticQuota base/l2")
    assert not owner.left_out
    assert owner.message == (
        "quota name 'l2' is also used by ElasticQuota bad/l2, created in the same second "
        f"({SECOND}); this quota keeps the name and ElasticQuota bad/l2 is left out of its tree"
    )


def test_the_owner_keeps_the_name_through_every_later_change() -> None:
    eq = engine().load([l2("base", OWNER_UID)], [pod("worker", "l2", cpu=3)], [node("n", cpu=9)])
    eq.solve()
    eq.upsert_quota(l2("bad", NEWCOMER_UID))
    eq.solve()

    eq.upsert_quota(replace(l2("base", OWNER_UID), max={"cpu": 50}))  # the owner is edited
    eq.upsert_quota(replace(l2("bad", NEWCOMER_UID), max={"cpu": 60}))  # and so is the newcomer

    assert eq.solve().quotas["l2"].max == {"cpu": 50}


def test_a_cold_start_without_a_record_keeps_the_name_with_the_older() -> None:
    older = l2("base", OWNER_UID, created=SECOND)
    newer = l2("bad", NEWCOMER_UID, created=LATER)
    for order in ([older, newer], [newer, older]):
        snapshot = engine().load(order).solve()
        assert snapshot.quotas["l2"].namespace == "base"
        assert problems_of(snapshot, "ElasticQuota base/l2") == []  # no tie: nothing to say


def test_a_cold_start_on_an_exact_tie_is_decided_by_uid_and_both_are_told() -> None:
    first, second = l2("zz", "1111"), l2("aa", "2222")
    for order in ([first, second], [second, first]):
        snapshot = engine().load(order).solve()
        assert snapshot.quotas["l2"].namespace == "zz"
        assert (
            "also used by ElasticQuota aa/l2"
            in problems_of(snapshot, "ElasticQuota zz/l2")[0].message
        )
        assert (
            "already used by ElasticQuota zz/l2"
            in problems_of(snapshot, "ElasticQuota aa/l2")[0].message
        )


def test_the_record_keeps_the_name_across_a_cold_start() -> None:
    owner = l2("base", OWNER_UID, record=OWNER_UID)
    snapshot = engine().load([l2("bad", NEWCOMER_UID), owner]).solve()
    assert snapshot.quotas["l2"].namespace == "base"


def test_a_record_naming_another_object_is_no_record() -> None:
    """A quota deleted and created again under the same name has a new uid: the old record on a
    copy of its manifest does not make the new object the owner."""
    stale = l2("base", OWNER_UID, created=LATER, record="an-earlier-object")
    snapshot = engine().load([stale, l2("bad", NEWCOMER_UID, created=SECOND)]).solve()
    assert snapshot.quotas["l2"].namespace == "bad"


def test_the_owners_to_record_are_those_of_shared_names_without_their_record() -> None:
    eq = engine().load([l2("base", OWNER_UID), quota("alone", max={"cpu": 1})])
    assert eq.unrecorded_owners() == []  # nobody shares a name: nothing to record

    eq.upsert_quota(l2("bad", NEWCOMER_UID))
    assert [(spec.namespace, spec.uid) for spec in eq.unrecorded_owners()] == [("base", OWNER_UID)]

    eq.upsert_quota(l2("base", OWNER_UID, record=OWNER_UID))  # the operator's write echoes back
    assert eq.unrecorded_owners() == []
    assert eq.name_owner("l2") == "base"


def test_when_the_owner_goes_the_name_passes_on_and_stays() -> None:
    eq = engine().load([l2("base", OWNER_UID), l2("bad", NEWCOMER_UID, created=LATER)])
    eq.solve()

    eq.delete_quota("base", "l2")
    assert eq.solve().quotas["l2"].namespace == "bad"

    eq.upsert_quota(l2("base", "ffff", created="2026-11-25T11:00:00Z"))  # created again
    assert eq.solve().quotas["l2"].namespace == "bad"


# -- orphans ------------------------------------------------------------------------------------

ORPHAN_TAIL = (
    f"the quota is left out of its tree and its pods count against {DEFAULT_QUOTA} until it is "
    "fixed"
)


def family() -> list[Quota]:
    return [
        quota("dept", min={"cpu": 10}, max={"cpu": BIG}, is_parent=True),
        quota("team", min={"cpu": 4}, max={"cpu": BIG}, parent="dept", is_parent=True),
        quota("squad", max={"cpu": BIG}, parent="team"),
    ]


def test_deleting_a_parent_with_children_leaves_them_as_orphans_that_say_so() -> None:
    eq = engine().load(family(), [pod("p", "squad", cpu=2)], [node("n", cpu=20)])
    assert eq.solve().pod_quota["team/p"] == "squad"

    eq.delete_quota("team", "dept")
    snapshot = eq.solve()

    assert problems_of(snapshot, "ElasticQuota team/team") == [
        Problem(
            "ElasticQuota team/team",
            f"orphaned: parent quota 'dept' does not exist; {ORPHAN_TAIL}",
            left_out=True,
        )
    ]
    assert problems_of(snapshot, "ElasticQuota team/squad") == [
        Problem(
            "ElasticQuota team/squad",
            f"orphaned: ancestor quota 'team' is left out; {ORPHAN_TAIL}",
            left_out=True,
        )
    ]
    assert snapshot.pod_quota["team/p"] == DEFAULT_QUOTA
    assert "team" not in snapshot.quotas  # not re-homed under the root


def test_the_children_of_a_parent_left_out_for_its_spec_are_told_it_is_left_out() -> None:
    """The parent exists (min above max, say): "does not exist" sent the reader looking for an
    object that is there; its own problems say why it is left out."""
    eq = engine().load(family())
    eq.solve()

    eq.hold_name(replace(family()[0], max={}))  # the parser left it out: only its name counts
    snapshot = eq.solve()

    [problem] = problems_of(snapshot, "ElasticQuota team/team")
    assert problem.message == f"orphaned: parent quota 'dept' is left out; {ORPHAN_TAIL}"
    eq.delete_quota("team", "dept")
    [problem] = problems_of(eq.solve(), "ElasticQuota team/team")
    assert problem.message == f"orphaned: parent quota 'dept' does not exist; {ORPHAN_TAIL}"


def test_clearing_is_parent_on_a_parent_with_children_leaves_them_as_orphans() -> None:
    eq = engine().load(family())
    eq.solve()

    eq.upsert_quota(replace(family()[0], is_parent=False))
    snapshot = eq.solve()

    [problem] = problems_of(snapshot, "ElasticQuota team/team")
    assert problem.message == (
        "orphaned: parent quota 'dept' is not marked quota.scheduling.koordinator.sh/"
        f"is-parent=true; {ORPHAN_TAIL}"
    )
    assert "dept" in snapshot.quotas  # the former parent itself is a valid leaf


def test_an_owner_whose_spec_breaks_keeps_its_name_from_the_newcomer() -> None:
    """An owner edited into an unusable spec (the parser leaves it out) is in no tree, but the
    newcomer does not take its name: the pods of the name wait in the default quota until the
    owner is fixed, and then count against it again."""
    owner = l2("base", OWNER_UID)
    eq = engine().load([owner], [pod("worker", "l2", cpu=3)], [node("n", cpu=9)])
    eq.solve()
    eq.upsert_quota(l2("bad", NEWCOMER_UID))
    eq.solve()

    eq.hold_name(replace(owner, max={}))  # left out: only its identity counts
    snapshot = eq.solve()
    assert "l2" not in snapshot.quotas
    assert snapshot.pod_quota["team/worker"] == DEFAULT_QUOTA
    assert "already used by ElasticQuota base/l2" in (
        problems_of(snapshot, "ElasticQuota bad/l2")[0].message
    )
    assert eq.name_owner("l2") == "base"

    eq.upsert_quota(owner)  # fixed
    snapshot = eq.solve()
    assert snapshot.quotas["l2"].namespace == "base"
    assert snapshot.pod_quota["team/worker"] == "l2"

    eq.delete_quota("base", "l2")
    eq.hold_name(replace(owner, max={}))
    eq.delete_quota("base", "l2")  # a deleted owner holds nothing any more
    assert eq.solve().quotas["l2"].namespace == "bad"


def test_a_left_out_quota_read_differently_but_still_itself_rebuilds_nothing() -> None:
    """A quota left out of its tree only holds its name: a change of what it reads as (its spec
    edited, still unusable) is no topology change; a change of who it is (a new record) is."""
    owner = l2("base", OWNER_UID)
    eq = engine().load([owner], [], [node("n", cpu=9)])
    eq.hold_name(replace(owner, max={"cpu": -1}))
    eq.solve()
    eq.hold_name(replace(owner, max={"cpu": -2}, min={"cpu": 5}))
    assert not eq.topology_stale
    eq.hold_name(replace(owner, name_record=OWNER_UID))
    assert eq.topology_stale
