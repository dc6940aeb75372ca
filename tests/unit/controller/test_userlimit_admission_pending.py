"""The pod webhook's user limits count the pods admitted a moment ago as they come and go
(``core.userlimits.pending``), not by adding every one of them again for each request: the same
answers as that, request after request, whatever happens to the admitted pods in between
(bound, deleted, finished, their identity changed, expired, admitted again, admitted while a bound
pod of their name is still in memory, their quota moved to another parent, a limit edited, the
oldest forgotten past ``RECENT_MAX``)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from elasticquota.api.parse import parse_pod
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks.userlimit_admission import RECENT_MAX, UserLimitAdmission
from elasticquota.core import keys
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.engine import EngineSettings

LIMITS = """
- limit: "specific user"
  users: [sue]
  maxresources: {cpu: 5}
  maxapplications: 3
- limit: "devs"
  groups: [dev]
  maxresources: {cpu: 7}
  maxapplications: 4
"""
TTL = 60.0


def pod_body(
    name: str, cpu: str, user: str, groups: list[str], node: str = "", quota: str = "team"
) -> dict[str, Any]:
    labels = {keys.POD_LABEL_QUOTA: quota}
    annotations = {keys.ANNO_USER_INFO: json.dumps({"user": user, "groups": groups})}
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels, "annotations": annotations},
        "spec": {"containers": [container], **({"nodeName": node} if node else {})},
        "status": {"phase": "Running" if node else "Pending"},
    }


def random_body(rng: random.Random, node: str = "", quotas: tuple[str, ...] = ()) -> dict[str, Any]:
    return pod_body(
        f"p{rng.randrange(8)}",
        rng.choice(("1", "2", "3")),
        rng.choice(("sue", "bob")),
        rng.choice(([], ["dev"])),
        node,
        rng.choice(quotas or ("team",)),
    )


class EveryOneAdded:
    """The webhook's answer as before: every pod admitted in the last ``TTL`` seconds, not bound
    in memory, added to an overlay of the ledger for each request."""

    def __init__(self, state: ControllerState, most: int = RECENT_MAX) -> None:
        self.state = state
        self.most = most
        self.admitted: dict[str, tuple[float, PodInfo, str]] = {}
        state.pod_listeners.append(self.changed)

    def changed(self, key: str, pod: PodInfo | None, created: str) -> None:
        if key in self.admitted:
            known = self.admitted[key][1].created
            if created and known and created != known:
                return  # about another pod of that name
            if pod is None or pod.node_name or pod.is_terminal:
                del self.admitted[key]
            else:
                self.admitted[key] = (self.admitted[key][0], pod, self.admitted[key][2])

    def allowed(self, pod: PodInfo, quota: str, now: float, remember: bool) -> bool:
        engine = self.state.engine
        for key, (since, _, _) in list(self.admitted.items()):
            known = engine.pods.get(key)
            if now - since > TTL or (known is not None and known.node_name):
                del self.admitted[key]
        overlay = engine.user_limits().overlay()
        for key, (_, admitted, its_quota) in self.admitted.items():
            if key != pod.key:
                overlay.add(admitted, its_quota)
        verdict = overlay.check(pod, quota)
        allowed = verdict is None or verdict.allowed
        if allowed and remember:
            self.admitted.pop(pod.key, None)
            self.admitted[pod.key] = (now, pod, quota)
            while len(self.admitted) > self.most:  # the oldest admission goes first
                del self.admitted[next(iter(self.admitted))]
        return allowed


def quota_body(name: str, limits: str = LIMITS, parent: str = "") -> dict[str, Any]:
    labels = {keys.LABEL_PARENT: parent} if parent else {}
    if name == "top":
        labels[keys.LABEL_IS_PARENT] = "true"
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": keys.QUOTA_KIND,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": labels,
            "annotations": {keys.ANNO_USER_LIMITS: limits},
        },
        "spec": {"min": {"cpu": "50"}, "max": {"cpu": "50"}},
    }


def world() -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_quota(quota_body("team"))
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "100"}}})
    state.mark_synced()
    return state


@pytest.mark.parametrize("seed", range(30))
def test_the_answers_are_those_of_every_admitted_pod_added_again(seed: int) -> None:
    rng = random.Random(seed)
    state, clock = world(), [0.0]
    admission = UserLimitAdmission(state, True, ttl=TTL, clock=lambda: clock[0])
    reference = EveryOneAdded(state)
    refused = 0
    for _ in range(120):
        action = rng.randrange(10)
        if action < 5:  # a new pod (a dry run now and then)
            body = random_body(rng)
            remember = rng.random() < 0.9
            pod = parse_pod(body)[0]
            assert isinstance(pod, PodInfo)
            expected = reference.allowed(pod, "team", clock[0], remember)
            found = admission.violations("CREATE", body, "team", remember=remember)
            assert (not found) == expected
            refused += not expected
        elif action < 8:  # the pod as the watch brings it: bound, pending, finished
            body = random_body(rng, node=rng.choice(("n1", "")))
            if rng.random() < 0.2:
                body["status"]["phase"] = "Succeeded"
            state.on_pod(body)
        elif action == 8:
            state.on_pod_deleted(random_body(rng))
        else:
            clock[0] += rng.choice((1.0, 20.0, 45.0))
    assert refused > 0


def test_the_admitted_pods_count_for_resources_and_applications() -> None:
    state = world()
    admission = UserLimitAdmission(state, True, clock=lambda: 0.0)
    for index in range(3):
        assert not admission.violations("CREATE", pod_body(f"a{index}", "1", "sue", []), "team")
    found = admission.violations("CREATE", pod_body("b", "3", "sue", []), "team")
    assert [violation.rule for violation in found] == ["user-limit"]
    assert "cpu: requested 3, used 3 of limit 5" in found[0].message
    assert "applications: a new application would make 4 running, limit 3" in found[0].message
    state.on_pod(pod_body("a0", "1", "sue", [], node="n1"))  # bound: the ledger counts it
    state.on_pod_deleted(pod_body("a1", "1", "sue", []))  # gone before it ran
    assert not admission.violations("CREATE", pod_body("b", "3", "sue", []), "team")


def random_limits(rng: random.Random) -> str:
    """One of ``LIMITS``' limits, or both, with other figures."""
    user = f"- limit: u\n  users: [sue]\n  maxresources: {{cpu: {rng.randrange(2, 8)}}}\n"
    group = f"- limit: g\n  groups: [dev]\n  maxapplications: {rng.randrange(1, 5)}\n"
    return rng.choice((user, group, user + group))


@pytest.mark.parametrize("seed", range(20))
def test_the_answers_follow_parents_moved_and_limits_edited_with_few_admissions_kept(
    seed: int,
) -> None:
    """The admitted pods' figures are counted again when a quota moves to another parent or a
    limit changes between two requests (their paths and tracked groups come from those), and at
    most ``RECENT_MAX`` admissions are kept, the oldest forgotten first, as before."""
    rng = random.Random(seed)
    state = world()
    state.on_quota(quota_body("top", random_limits(rng)))
    state.on_quota(quota_body("other", random_limits(rng), parent="top"))
    admission = UserLimitAdmission(state, True, ttl=TTL, clock=lambda: 0.0, most=5)
    reference = EveryOneAdded(state, most=5)
    quotas, refused = ("team", "other"), 0
    for _ in range(120):
        action = rng.randrange(8)
        if action < 4:
            body = random_body(rng, quotas=quotas)
            pod = parse_pod(body)[0]
            assert isinstance(pod, PodInfo)
            quota = body["metadata"]["labels"][keys.POD_LABEL_QUOTA]
            expected = reference.allowed(pod, quota, 0.0, True)
            assert (not admission.violations("CREATE", body, quota)) == expected
            refused += not expected
        elif action < 6:
            state.on_pod(random_body(rng, node=rng.choice(("n1", "")), quotas=quotas))
        elif action == 6:  # another parent for a quota with admitted pods
            parent = rng.choice(("top", ""))
            state.on_quota(quota_body(rng.choice(quotas), random_limits(rng), parent=parent))
        else:  # a limit edited
            state.on_quota(quota_body("top", random_limits(rng)))
    assert refused > 0
