"""The validating pod webhook refuses a new pod over its user's or group's limit where gating
cannot hold it back (``USER_LIMITS_REFUSE_PODS``, API servers without scheduling gates): served
through Kopf as the API server sends it; off by default, never for updates, never where the gate
runs; a burst of new pods sees the ones admitted a moment ago."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import kopf
import pytest
from admission_reviews import POD_RESOURCE, admission_review

from elasticquota.controller.runner import make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import VALIDATE_POD
from elasticquota.controller.webhooks.userlimit_admission import UserLimitAdmission
from elasticquota.core import keys
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies

LIMITS = """
- limit: "specific user"
  users: [sue]
  maxresources: {cpu: 5}
- limit: "devs"
  groups: [dev]
  maxapplications: 2
"""


@pytest.fixture
def world(state: ControllerState, k8s: Bodies) -> ControllerState:
    """Quota team (limits above), sue running 4 cpu on n1, on a server without gates."""
    state.on_quota(
        k8s.quota(
            "team", min={"cpu": "20"}, max={"cpu": "20"},
            annotations={keys.ANNO_USER_LIMITS: LIMITS},
        )
    )  # fmt: skip
    state.on_node(k8s.node("n1", allocatable={"cpu": "100", "memory": "100Gi"}))
    state.on_pod(sue_pod(k8s, "running", "4", node="n1"))
    state.mark_synced()
    return state


def sue_pod(
    k8s: type[Bodies], name: str, cpu: str, node: str = "", user: str = "sue", groups: Any = ()
) -> dict[str, Any]:
    body = k8s.pod(
        name, quota="team", requests={"cpu": cpu}, node=node,
        phase="Running" if node else "Pending",
    )  # fmt: skip
    identity = {"user": user, "groups": list(groups)}
    body["metadata"]["annotations"] = {keys.ANNO_USER_INFO: json.dumps(identity)}
    return body


Review = Callable[..., Any]


@pytest.fixture
def review() -> Review:
    """``await review(state, settings, pod, operation="CREATE")``: one AdmissionReview to the
    operator's registry, made once per test and settings (the operator registers its handlers
    once: what the webhook remembers between requests is kept)."""
    registries: dict[int, kopf.OperatorRegistry] = {}

    async def send(
        state: ControllerState,
        settings: Settings,
        pod: dict[str, Any],
        operation: str = "CREATE",
        dry_run: bool = False,
    ) -> dict[str, Any]:
        registry = registries.get(id(settings))
        if registry is None:
            registry = registries[id(settings)] = make_registry(state, settings)
        return await _review(registry, pod, operation, dry_run)

    return send


async def _review(
    registry: kopf.OperatorRegistry, pod: dict[str, Any], operation: str, dry_run: bool
) -> dict[str, Any]:
    extra: dict[str, Any] = {"oldObject": pod} if operation == "UPDATE" else {}
    if dry_run:
        extra["dryRun"] = True
    return await admission_review(
        registry, VALIDATE_POD, POD_RESOURCE, operation=operation, object=pod, **extra
    )


@pytest.fixture
def refusing(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(webhook_port=9443, user_limits_refuse_pods=True)


async def test_off_by_default_a_pod_over_its_user_limit_gets_in(
    world: ControllerState,
    review: Review,
    make_settings: Callable[..., Settings],
    k8s: type[Bodies],
) -> None:
    settings = make_settings(webhook_port=9443)
    assert settings.user_limits_refuse_pods is False
    assert (await review(world, settings, sue_pod(k8s, "new", "2")))["allowed"] is True


async def test_a_pod_over_its_user_limit_is_refused_with_user_quota_resource_and_numbers(
    world: ControllerState, review: Review, refusing: Settings, k8s: type[Bodies]
) -> None:
    answer = await review(world, refusing, sue_pod(k8s, "new", "2"))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    assert answer["status"]["message"] == (
        "pod team/new would break a user or group limit: user sue at quota team: cpu: requested "
        "2, used 4 of limit 5 (user limit specific user) (this API server has no scheduling "
        "gates to hold the pod until it fits, so it is refused; create it again once the usage "
        "has dropped)"
    )
    # Exactly at the limit is allowed; another user is not concerned.
    assert (await review(world, refusing, sue_pod(k8s, "one", "1")))["allowed"] is True
    assert (await review(world, refusing, sue_pod(k8s, "bob", "9", user="bob")))["allowed"]


async def test_a_burst_of_new_pods_counts_the_ones_admitted_a_moment_ago(
    world: ControllerState, review: Review, refusing: Settings, k8s: type[Bodies]
) -> None:
    """On these servers a pod is scheduled right after its creation: two pods of 1 cpu each
    against 1 cpu of room must not both get in before either is bound."""
    assert (await review(world, refusing, sue_pod(k8s, "a", "1")))["allowed"] is True
    second = await review(world, refusing, sue_pod(k8s, "b", "1"))
    assert second["allowed"] is False
    assert "used 5 of limit 5" in second["status"]["message"]
    # Once the first is bound the ledger counts it, and it is not counted twice.
    world.on_pod(sue_pod(k8s, "a", "1", node="n1"))
    world.on_pod_deleted(sue_pod(k8s, "running", "4", node="n1"))
    assert (await review(world, refusing, sue_pod(k8s, "b", "4")))["allowed"] is True


async def test_a_dry_run_is_judged_but_does_not_count_afterwards(
    world: ControllerState, review: Review, refusing: Settings, k8s: type[Bodies]
) -> None:
    assert (await review(world, refusing, sue_pod(k8s, "a", "1"), dry_run=True))["allowed"]
    assert (await review(world, refusing, sue_pod(k8s, "b", "1")))["allowed"] is True
    refused = await review(world, refusing, sue_pod(k8s, "c", "1"), dry_run=True)
    assert refused["allowed"] is False  # a dry run is refused like the real request


async def test_a_group_applications_limit_is_refused_on_applications(
    world: ControllerState, review: Review, refusing: Settings, k8s: type[Bodies]
) -> None:
    for name in ("x", "y"):
        world.on_pod(sue_pod(k8s, name, "1", node="n1", user="amy", groups=["dev"]))
    answer = await review(world, refusing, sue_pod(k8s, "z", "1", user="amy", groups=["dev"]))
    assert answer["allowed"] is False
    assert "group dev at quota team: applications: a new application would make 3 running, " \
        "limit 2 (user limit devs)" in answer["status"]["message"]  # fmt: skip


async def test_never_where_the_gate_holds_pods_nor_for_updates(
    world: ControllerState, review: Review, refusing: Settings, k8s: type[Bodies]
) -> None:
    pod = sue_pod(k8s, "new", "2")
    assert (await review(world, refusing, pod, "UPDATE"))["allowed"] is True
    world.gates_supported = True
    assert (await review(world, refusing, pod))["allowed"] is True


def test_an_admitted_pod_counts_only_for_a_while_until_it_is_bound(
    world: ControllerState, k8s: type[Bodies]
) -> None:
    now = [0.0]
    check = UserLimitAdmission(world, enabled=True, ttl=30.0, clock=lambda: now[0])
    assert check.violations("CREATE", sue_pod(k8s, "a", "1"), "team") == []
    (refused,) = check.violations("CREATE", sue_pod(k8s, "b", "1"), "team")
    assert refused.rule == "user-limit"
    now[0] = 31.0  # "a" never got bound: it stops counting
    assert check.violations("CREATE", sue_pod(k8s, "b", "1"), "team") == []


def test_an_admitted_pod_deleted_or_finished_before_it_is_bound_stops_counting_at_once(
    world: ControllerState, k8s: type[Bodies]
) -> None:
    """sue has 1 cpu of room: a pod admitted for it, then deleted (or finished) unbound, must not
    hold back her next pod (its Job's replacement, her next try) for the rest of the minute."""
    check = UserLimitAdmission(world, enabled=True, clock=lambda: 0.0)
    assert check.violations("CREATE", sue_pod(k8s, "a", "1"), "team") == []
    world.on_pod(sue_pod(k8s, "a", "1"))
    world.on_pod_deleted(sue_pod(k8s, "a", "1"))
    assert check.violations("CREATE", sue_pod(k8s, "b", "1"), "team") == []
    world.on_pod(sue_pod(k8s, "b", "1"))
    failed = sue_pod(k8s, "b", "1")
    failed["status"]["phase"] = "Failed"
    world.on_pod(failed)
    assert check.violations("CREATE", sue_pod(k8s, "c", "1"), "team") == []
    (refused,) = check.violations("CREATE", sue_pod(k8s, "d", "1"), "team")  # "c" still counts
    assert "used 5 of limit 5" in refused.message


def test_the_late_deletion_of_the_pod_an_admitted_one_replaces_does_not_drop_it(
    world: ControllerState, k8s: type[Bodies]
) -> None:
    """sue has 1 cpu of room. Her pending pod "a" is deleted and created again at once (a
    StatefulSet's replacement); the webhook admits the new "a" before the watch brings the old
    one's deletion. That deletion is about the old pod (created earlier): the new one still
    counts, and her next pod is refused."""
    check = UserLimitAdmission(world, enabled=True, clock=lambda: 0.0)
    old = sue_pod(k8s, "a", "1")
    world.on_pod(old)
    new = sue_pod(k8s, "a", "1")
    new["metadata"]["creationTimestamp"] = "2024-01-01T00:05:00Z"
    assert check.violations("CREATE", new, "team") == []
    world.on_pod_deleted(old)
    (refused,) = check.violations("CREATE", sue_pod(k8s, "b", "1"), "team")
    assert "used 5 of limit 5" in refused.message
    world.on_pod_deleted(new)  # the new one's own deletion does drop it
    assert check.violations("CREATE", sue_pod(k8s, "b", "1"), "team") == []


def test_an_admitted_pod_whose_identity_changes_before_it_is_bound_counts_for_its_new_user(
    world: ControllerState, k8s: type[Bodies]
) -> None:
    """sue has 1 cpu of room; a pod admitted for her is handed to bob (a trusted controller
    changes its user-info) while it waits for a node: it counts for bob now, not for sue."""
    check = UserLimitAdmission(world, enabled=True, clock=lambda: 0.0)
    assert check.violations("CREATE", sue_pod(k8s, "a", "1"), "team") == []
    world.on_pod(sue_pod(k8s, "a", "1", user="bob"))
    assert check.violations("CREATE", sue_pod(k8s, "b", "1"), "team") == []
    bob = UserLimitAdmission(world, enabled=True, clock=lambda: 0.0)
    assert bob.violations("CREATE", sue_pod(k8s, "c", "1", user="bob"), "team") == []
    world.on_pod(sue_pod(k8s, "c", "1"))  # the other way round: sue's now, 4 + 1 of 5
    (refused,) = bob.violations("CREATE", sue_pod(k8s, "d", "1"), "team")
    assert "used 5 of limit 5" in refused.message


def test_a_refusal_is_a_kopf_admission_error_through_the_admission_object(
    world: ControllerState, refusing: Settings, k8s: type[Bodies]
) -> None:
    from elasticquota.controller.webhooks import register_webhooks

    admission = register_webhooks(kopf.OperatorRegistry(), world, refusing)
    with pytest.raises(kopf.AdmissionError, match="user sue at quota team"):
        admission.validate_pod("CREATE", sue_pod(k8s, "new", "2"), None)
