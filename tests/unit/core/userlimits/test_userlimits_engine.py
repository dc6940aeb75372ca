"""User limits wired through the quota engine: books per tree, usage fed pod by pod, problems.

The engine keeps one ledger per tree. Every figure it publishes must equal what a fresh engine
loaded with the same objects computes (incremental = from scratch), through pod events, quota
changes and topology rebuilds run in three steps (the off-loop path).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from userlimits_builders import NODE, limited_quota, user_pod

from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.rebuild import compute_rebuild
from elasticquota.core.userlimits import LimitedPod, UserLimitLedger

quota = limited_quota
pod = user_pod


def _fields(spec: Quota) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in Quota.__dataclass_fields__}


def tree(root_limits: str | None = None, leaf_limits: str | None = None) -> list[Quota]:
    """root ─ leaf, root ─ other."""
    return [
        quota("root", limits=root_limits, is_parent=True),
        quota("leaf", "root", leaf_limits),
        quota("other", "root"),
    ]


#: A limit no pod of these tests reaches: it makes the tree one whose usage is tracked.
GENEROUS = '[{"users": ["*"], "maxresources": {"cpu": "1000"}}]'


def fresh_document(engine: QuotaEngine) -> dict[str, Any]:
    """What an engine loaded from scratch with the same objects publishes."""
    specs = engine.specs  # the quotas it holds now
    fresh = QuotaEngine(engine.settings).load(specs, engine.pods.values(), [NODE])
    return fresh.solve().user_limits.usage_document()


def test_usage_follows_pod_events_at_every_level_of_the_path() -> None:
    engine = QuotaEngine().load(tree(GENEROUS), [pod("a", "leaf", app="ns/x")], [NODE])
    users = engine.solve().user_limits.usage_document()["users"]
    assert users["sue"]["leaf"]["used"] == {"cpu": "1", "pods": "1"}
    assert users["sue"]["root"]["used"] == {"cpu": "1", "pods": "1"}
    assert "other" not in users["sue"]

    engine.upsert_pod(pod("b", "other", cpu=500, app="ns/x"))  # the same application
    engine.upsert_pod(pod("a", "leaf", cpu=2_000, app="ns/x"))  # an update replaces
    engine.upsert_pod(pod("pending", "leaf", state="released"))  # not bound: not used
    document = engine.solve().user_limits.usage_document()
    assert document["users"]["sue"]["root"]["used"] == {"cpu": "2500m", "pods": "2"}
    assert document["users"]["sue"]["root"]["applications"] == 1
    assert document == fresh_document(engine)

    engine.upsert_pod(pod("a", "leaf", phase="Succeeded"))  # finished: no longer used
    engine.delete_pod("ns", "b")
    document = engine.solve().user_limits.usage_document()
    assert document == {"users": {}, "groups": {}}
    assert document == fresh_document(engine)


def test_a_snapshot_keeps_the_usage_it_was_made_with() -> None:
    engine = QuotaEngine().load(tree(GENEROUS), [pod("a", "leaf")], [NODE])
    before = engine.solve()
    engine.upsert_pod(pod("b", "leaf"))
    engine.delete_pod("ns", "a")
    assert before.user_limits.usage_document()["users"]["sue"]["leaf"]["used"]["pods"] == "1"
    assert before.user_limits.ledger("") is not None
    after = engine.solve().user_limits
    assert after.usage_document()["users"]["sue"]["leaf"]["used"]["pods"] == "1"
    assert before.user_limits.ledger("").pods()[0].key == "ns/a"  # type: ignore[union-attr]


def test_a_tree_without_limits_tracks_nothing_until_a_limit_comes() -> None:
    """Most trees have no user limit: their pods cost no ledger. A limit added later counts the
    pods already running; removing the last one drops the tree's ledger again."""
    engine = QuotaEngine().load(tree(), [pod("a", "leaf"), pod("b", "other")], [NODE])
    assert engine.solve().user_limits.ledger("") is None
    engine.upsert_pod(pod("c", "leaf"))
    engine.upsert_quota(quota("root", limits=GENEROUS, is_parent=True))
    document = engine.solve().user_limits.usage_document()
    assert document["users"]["sue"]["root"]["used"] == {"cpu": "3", "pods": "3"}
    assert document == fresh_document(engine)
    engine.upsert_quota(quota("root", is_parent=True))
    assert engine.solve().user_limits.ledger("") is None
    engine.delete_pod("ns", "a")  # the pod's record left with the ledger
    engine.upsert_quota(quota("root", limits=GENEROUS, is_parent=True))
    document = engine.solve().user_limits.usage_document()
    assert document["users"]["sue"]["root"]["used"] == {"cpu": "2", "pods": "2"}
    assert document == fresh_document(engine)


def test_pods_of_the_reserved_quotas_are_not_tracked() -> None:
    engine = QuotaEngine().load(tree(GENEROUS), [pod("a", "nowhere")], [NODE])
    snapshot = engine.solve()
    assert snapshot.pod_quota["ns/a"] == DEFAULT_QUOTA
    assert snapshot.user_limits.usage_document() == {"users": {}, "groups": {}}


def test_a_pod_without_identity_counts_as_the_configured_default_user() -> None:
    engine = QuotaEngine(EngineSettings(default_user="anonymous"))
    engine.load(tree(GENEROUS), [pod("a", "leaf", user="")], [NODE])
    assert set(engine.solve().user_limits.usage_document()["users"]) == {"anonymous"}


def test_an_invalid_limit_is_a_problem_and_only_that_limit_is_dropped() -> None:
    limits = (
        '- limit: "bad"\n  users: ["*", sue]\n  maxapplications: 1\n'  # named after wildcard
        '- limit: "good"\n  users: [bob]\n  maxresources: {cpu: 1}\n'
    )
    engine = QuotaEngine().load(tree(leaf_limits=limits), [pod("a", "leaf", user="bob")], [NODE])
    snapshot = engine.solve()
    messages = [p.message for p in snapshot.problems if p.object == "ElasticQuota ns/leaf"]
    assert len(messages) == 1
    assert 'quota leaf: user limit #1 "bad"' in messages[0]
    assert "(rule user-after-wildcard)" in messages[0]
    assert not any(p.left_out for p in snapshot.problems)
    assert set(snapshot.quotas) >= {"root", "leaf", "other"}  # everything still computed
    bob = snapshot.user_limits.usage_document()["users"]["bob"]["leaf"]
    assert bob["maxResources"] == {"cpu": "1"} and bob["limit"] == "good"
    verdict = snapshot.user_limits.check(pod("b", "leaf", user="bob", state="released"), "leaf")
    assert verdict is not None and not verdict.allowed  # the good limit holds: 1 cpu used of 1


def test_a_limit_above_its_ancestors_is_a_problem_on_the_lower_quota() -> None:
    engine = QuotaEngine().load(
        tree(
            root_limits="- users: [sue]\n  maxresources: {cpu: 2}",
            leaf_limits="- users: [sue]\n  maxresources: {cpu: 3}",
        ),
        [],
        [NODE],
    )
    (problem,) = engine.solve().problems
    assert problem.object == "ElasticQuota ns/leaf"
    assert "cpu 3 > 2" in problem.message and "exceeds-ancestor-limit" in problem.message


def test_a_limit_change_moves_usage_to_the_new_group_without_reparsing_others() -> None:
    engine = QuotaEngine().load(
        tree(root_limits='- groups: [dev, "*"]\n  maxapplications: 5'),
        [pod("a", "leaf", groups=("dev",)), pod("b", "leaf", user="bob", groups=("ops",))],
        [NODE],
    )
    groups = engine.solve().user_limits.usage_document()["groups"]
    assert set(groups) == {"dev", "*"}
    engine.upsert_quota(
        quota("root", limits='- groups: [ops, "*"]\n  maxapplications: 5', is_parent=True)
    )
    document = engine.solve().user_limits.usage_document()
    assert set(document["groups"]) == {"ops", "*"}
    assert document["groups"]["*"]["root"]["used"]["pods"] == "1"  # sue's pod moved to "*"
    assert document == fresh_document(engine)
    memo = engine._limit_memo
    assert set(memo) == {"root"}


def test_a_reparented_quota_moves_its_pods_usage_and_limits_follow_the_tree() -> None:
    specs = [
        *tree(root_limits="- users: [sue]\n  maxapplications: 1"),
        quota("top", is_parent=True),
    ]
    engine = QuotaEngine().load(specs, [pod("a", "leaf", app="ns/x")], [NODE])
    newcomer = pod("b", "other", state="released")
    assert not engine.solve().user_limits.check(newcomer, "other").allowed  # type: ignore[union-attr]
    engine.upsert_quota(quota("leaf", "top"))
    snapshot = engine.solve()
    document = snapshot.user_limits.usage_document()
    assert set(document["users"]["sue"]) == {"leaf", "top", "root"}  # root: its named limit
    assert document["users"]["sue"]["root"]["applications"] == 0
    assert snapshot.user_limits.check(newcomer, "other").allowed  # type: ignore[union-attr]
    assert document == fresh_document(engine)


def test_events_during_an_off_loop_rebuild_are_replayed_into_the_new_ledgers() -> None:
    engine = QuotaEngine().load(tree(), [pod("a", "leaf"), pod("b", "leaf")], [NODE])
    engine.solve()
    engine.upsert_quota(quota("other", "root", "- users: [sue]\n  maxapplications: 3"))
    job = engine.prepare_rebuild()
    assert job is not None
    outcome = compute_rebuild(job)
    engine.upsert_pod(pod("c", "other"))  # while the rebuild runs
    engine.delete_pod("ns", "a")
    assert engine.finish_rebuild(job, outcome)
    document = engine.solve().user_limits.usage_document()
    assert document["users"]["sue"]["root"]["used"]["pods"] == "2"
    assert document["users"]["sue"]["other"]["maxApplications"] == 3
    assert document == fresh_document(engine)


# -- property: incremental equals from scratch ----------------------------------------------------

LIMIT_TEXTS = (
    None,
    "- users: [u1]\n  maxapplications: 2",
    '- users: ["*"]\n  maxresources: {cpu: 3}',
    '- groups: [g1, "*"]\n  maxresources: {cpu: 4}',
    "- users: [u2]\n  maxresources: {cpu: -1}",  # broken: a problem
)
QUOTAS = ("root", "leaf", "other")


@st.composite
def events(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["pod", "pod", "pod", "delete", "limits", "move", "rebuild"]))
        if kind == "pod":
            steps.append(
                (
                    "pod",
                    pod(
                        f"p{draw(st.integers(0, 6))}",
                        draw(st.sampled_from([*QUOTAS, "gone"])),
                        cpu=draw(st.integers(0, 2)) * 500,
                        user=draw(st.sampled_from(["u1", "u2", ""])),
                        groups=tuple(draw(st.lists(st.sampled_from(["g1", "g2"]), max_size=2))),
                        app=f"ns/{draw(st.sampled_from(['x', 'y']))}",
                        state=draw(st.sampled_from(["running", "released"])),
                    ),
                )
            )
        elif kind == "delete":
            steps.append(("delete", f"p{draw(st.integers(0, 6))}"))
        elif kind == "limits":
            steps.append(
                ("limits", (draw(st.sampled_from(QUOTAS)), draw(st.sampled_from(LIMIT_TEXTS))))
            )
        elif kind == "move":
            steps.append(("move", draw(st.sampled_from(["root", "top"]))))
        else:
            steps.append(("rebuild", draw(st.booleans())))
    return steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events())
def test_incremental_usage_equals_a_fresh_engine(steps: list[tuple[str, Any]]) -> None:
    specs = {spec.name: spec for spec in [*tree(), quota("top", is_parent=True)]}
    engine = QuotaEngine().load(specs.values(), [], [NODE])
    pending = None
    for kind, value in steps:
        if kind == "pod":
            engine.upsert_pod(value)
        elif kind == "delete":
            engine.delete_pod("ns", value)
        elif kind == "limits":
            name, text = value
            specs[name] = Quota(**{**_fields(specs[name]), "user_limits": text})
            engine.upsert_quota(specs[name])
        elif kind == "move":
            specs["leaf"] = Quota(**{**_fields(specs["leaf"]), "parent": value})
            engine.upsert_quota(specs["leaf"])
        elif pending is None:
            pending = engine.prepare_rebuild()
            outcome = compute_rebuild(pending) if pending is not None else None
        else:
            if value and outcome is not None:
                engine.finish_rebuild(pending, outcome)
            pending = None
    snapshot = engine.solve()
    fresh = QuotaEngine().load(specs.values(), engine.pods.values(), [NODE]).solve()
    assert snapshot.user_limits.usage_document() == fresh.user_limits.usage_document()
    assert sorted(p.message for p in snapshot.problems) == sorted(p.message for p in fresh.problems)


def test_a_fork_and_a_frozen_view_never_see_each_others_changes() -> None:
    live = UserLimitLedger()
    live.add(LimitedPod("ns/a", ("q",), "sue", (), "ns/x", {"cpu": 1}))
    frozen = live.freeze()
    forked = live.fork()
    live.add(LimitedPod("ns/b", ("q",), "sue", (), "ns/y", {"cpu": 2}))
    forked.remove("ns/a")
    overlay = frozen.overlay()
    overlay.add(LimitedPod("ns/c", ("q",), "bob", (), "ns/z", {"cpu": 4}))
    assert live.used("user", "sue", "q") == {"cpu": 3, "pods": 2}
    assert frozen.used("user", "sue", "q") == {"cpu": 1, "pods": 1}
    assert frozen.used("user", "bob", "q") == {}
    assert overlay.used("user", "bob", "q") == {"cpu": 4, "pods": 1}
    assert forked.snapshot() == {}
    assert len(live) == 2 and len(frozen) == 1 and len(forked) == 0 and len(overlay) == 2
