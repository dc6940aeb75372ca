"""Properties of user-limit accounting and admission over random trees of limits and pod events.

- Admitting pods only when ``check`` passes never lets a user or a group exceed a limit in force at
  any level, and ``check`` refuses only pods that would (it is exactly the limit, not stricter).
- Incremental accounting (starts, stops, replacements, configuration changes in any order) always
  equals a recomputation from scratch over the pods that count.
- The limits that survive the checks pass them again (dropping one object never breaks another).

The expected figures are computed here from first principles (sum over pods, per quota on the
path), independently of the ledger's own bookkeeping.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core.quantities.resources import format_resource_list
from elasticquota.core.userlimits import (
    LimitBook,
    LimitedPod,
    LimitEntry,
    QuotaLimitSource,
    Subject,
    UserLimitLedger,
    build_book,
    check_hierarchy,
    check_limit_objects,
)

PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: root ─ a ─ a1, a2 ; root ─ b. Pods may sit in any quota, parents included.
PARENTS: dict[str, str | None] = {"root": None, "a": "root", "a1": "a", "a2": "a", "b": "root"}
USERS = ("u1", "u2", "u3")
GROUPS = ("g1", "g2", "g3")
APPS = ("x", "y", "z")


def path_of(quota: str) -> tuple[str, ...]:
    path = []
    current: str | None = quota
    while current is not None:
        path.append(current)
        current = PARENTS[current]
    return tuple(path)


def _limit_object() -> st.SearchStrategy[dict[str, Any]]:
    resources = st.dictionaries(
        st.sampled_from(["cpu", "memory", "pods"]), st.integers(0, 4), max_size=3
    )
    return st.fixed_dictionaries(
        {
            "users": st.lists(
                st.sampled_from([*USERS[:2], "*"]), min_size=1, max_size=2, unique=True
            ),
            "groups": st.lists(st.sampled_from([*GROUPS[:2], "*"]), max_size=2, unique=True),
        },
        optional={"maxresources": resources, "maxapplications": st.integers(0, 3)},
    )


#: Annotation per quota; objects the rules refuse are dropped, the rest is the book under test.
configs = st.fixed_dictionaries({quota: st.lists(_limit_object(), max_size=3) for quota in PARENTS})


def book_of(config: dict[str, list[dict[str, Any]]]) -> LimitBook:
    book, _ = build_book(
        QuotaLimitSource(quota, PARENTS[quota], json.dumps(objects))
        for quota, objects in config.items()
    )
    return book


pod_specs = st.tuples(
    st.sampled_from(sorted(PARENTS)),
    st.sampled_from(USERS),
    st.lists(st.sampled_from(GROUPS), max_size=3, unique=True),
    st.sampled_from(APPS),
    st.integers(0, 3),  # cpu, whole cores
    st.integers(0, 3),  # memory
)


def make_pod(key: str, spec: tuple[str, str, list[str], str, int, int]) -> LimitedPod:
    quota, user, groups, app, cpu, memory = spec
    request = {"cpu": cpu * 1000, "memory": memory}
    return LimitedPod(key, path_of(quota), user, tuple(groups), app, request)


State = dict[Subject, dict[str, tuple[dict[str, int], frozenset[str]]]]


def recompute(book: LimitBook, pods: Iterable[LimitedPod]) -> State:
    """Usage and running applications from scratch: every pod, every quota on its path."""
    used: dict[Subject, dict[str, dict[str, int]]] = {}
    apps: dict[Subject, dict[str, set[str]]] = {}
    for pod in pods:
        group = book.tracked_group(pod.path, pod.groups)
        subjects: list[Subject] = [("user", pod.user)]
        if group:
            subjects.append(("group", group))
        for subject in subjects:
            for quota in pod.path:
                at = used.setdefault(subject, {}).setdefault(quota, {})
                for name, value in pod.request.items():
                    at[name] = at.get(name, 0) + value
                at["pods"] = at.get("pods", 0) + 1
                apps.setdefault(subject, {}).setdefault(quota, set()).add(pod.app)
    return {
        subject: {
            quota: ({k: v for k, v in at.items() if v}, frozenset(apps[subject][quota]))
            for quota, at in quotas.items()
        }
        for subject, quotas in used.items()
    }


def breaches(book: LimitBook, state: State) -> list[str]:
    """Every limit in force that the state exceeds, at any quota, for any user or group."""
    found = []
    for (kind, name), quotas in state.items():
        for quota, (used, running) in quotas.items():
            entry = (
                book.user_limit(quota, name)[0] if kind == "user" else book.group_limit(quota, name)
            )
            if entry is None:
                continue
            for resource, limit in entry.max_resources.items():
                if used.get(resource, 0) > limit:
                    found.append(f"{kind} {name} {quota} {resource} {used[resource]} > {limit}")
            if entry.max_applications and len(running) > entry.max_applications:
                found.append(f"{kind} {name} {quota} apps {len(running)}")
    return found


#: A pod starts, or the running pod at an index (taken modulo their number) stops.
starts_and_stops = (
    st.tuples(st.just("start"), pod_specs),
    st.tuples(st.just("stop"), st.integers(0, 30)),
)

events = st.lists(st.one_of(*starts_and_stops), max_size=40)


@PROPERTIES
@given(config=configs, script=events)
def test_admission_never_lets_a_user_or_group_exceed_a_limit_and_refuses_only_breaches(
    config: dict[str, list[dict[str, Any]]], script: list[tuple[str, Any]]
) -> None:
    book = book_of(config)
    ledger = UserLimitLedger(book)
    running: dict[str, LimitedPod] = {}
    for step, (action, argument) in enumerate(script):
        if action == "start":
            pod = make_pod(f"ns/p{step}", argument)
            verdict = ledger.check(pod)
            after = recompute(book, [*running.values(), pod])
            # Allowed exactly when the state with the pod added breaks no limit anywhere.
            assert verdict.allowed == (not breaches(book, after)), verdict.reason
            if verdict.allowed:
                ledger.add(pod)
                running[pod.key] = pod
        elif running:
            key = sorted(running)[argument % len(running)]
            ledger.remove(key)
            del running[key]
        assert breaches(book, recompute(book, running.values())) == []
        assert ledger.over_use() == []


changes = st.lists(
    st.one_of(
        *starts_and_stops,
        st.tuples(st.just("replace"), st.tuples(st.integers(0, 30), pod_specs)),
        st.tuples(st.just("config"), configs),
    ),
    max_size=30,
)


@PROPERTIES
@given(config=configs, script=changes)
def test_incremental_accounting_equals_recomputation_after_any_sequence_of_events(
    config: dict[str, list[dict[str, Any]]], script: list[tuple[str, Any]]
) -> None:
    book = book_of(config)
    ledger = UserLimitLedger(book)
    counted: dict[str, LimitedPod] = {}
    for step, (action, argument) in enumerate(script):
        if action == "start":
            pod = make_pod(f"ns/p{step}", argument)
            ledger.add(pod)  # counting is never refused: the check is the caller's
            counted[pod.key] = pod
        elif action == "stop" and counted:
            key = sorted(counted)[argument % len(counted)]
            assert ledger.remove(key) == counted.pop(key)
        elif action == "replace" and counted:
            index, spec = argument
            key = sorted(counted)[index % len(counted)]
            counted[key] = make_pod(key, spec)
            ledger.add(counted[key])
        elif action == "config":
            book = book_of(argument)
            ledger.replace_book(book)
        expected = recompute(book, counted.values())
        assert ledger.snapshot() == expected
        assert len(ledger) == len(counted)
    fresh = UserLimitLedger.from_pods(book, counted.values())
    assert fresh.snapshot() == ledger.snapshot()
    assert fresh.over_use() == ledger.over_use()
    assert fresh.usage() == ledger.usage()
    # Whatever over-use a configuration change left is exactly what over_use lists.
    assert len(ledger.over_use()) == len(breaches(book, ledger.snapshot()))


def _as_object(entry: LimitEntry) -> dict[str, Any]:
    raw: dict[str, Any] = {"users": list(entry.users), "groups": list(entry.groups)}
    if entry.max_resources:
        raw["maxresources"] = format_resource_list(entry.max_resources)
    if entry.max_applications:
        raw["maxapplications"] = entry.max_applications
    return raw


@PROPERTIES
@given(config=configs)
def test_the_limits_that_survive_the_checks_pass_them_again(
    config: dict[str, list[dict[str, Any]]],
) -> None:
    """Dropping a broken object never leaves the others in a state the rules refuse: the book is
    a fixed point of both the per-quota rules and the rules between levels."""
    book = book_of(config)
    for quota, limits in book.quotas.items():
        objects = [_as_object(entry) for entry in limits.entries]
        again, problems = check_limit_objects(quota, objects)
        assert problems == []
        assert [entry.max_resources for entry in again.entries] == [
            entry.max_resources for entry in limits.entries
        ]
    checked, problems = check_hierarchy(book.quotas, PARENTS)
    assert problems == []
    assert {q: limits.entries for q, limits in checked.items()} == {
        q: limits.entries for q, limits in book.quotas.items()
    }
