"""The admission webhooks' wiring: Kopf registrations, decisions over the operator's memory, the
AdmissionReview round trip through Kopf, the server settings and the self-signed certificate.

Rules (controller/webhooks/): handlers are coroutines registered only when a webhook port is set,
the quota webhooks with the quota failure policy of the settings (Fail by default), the pod webhooks
with the pod one (Ignore by default); a refusal is a ``kopf.AdmissionError`` (403) carrying every
violation; before the initial listing the operator refuses (Fail) or abstains (Ignore), each kind by
its own policy; what was just admitted is seen by the next request until the watch delivers it;
pods of ignored namespaces, kube-system and the operator's own namespace are not checked, and the
managed configurations' pod webhooks exclude those namespaces by a namespaceSelector; the
operator's own writes (reserved quotas) are admitted.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import ipaddress
import json
import logging
import ssl
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kopf
import pytest
from admission_reviews import (
    DISCOVERED,
    POD_RESOURCE,
    QUOTA_RESOURCE,
    admission_review,
    free_port,
    managed_webhooks,
    serving,
)
from cryptography import x509
from yielding import yields_during

from elasticquota.controller.reconcile.reserved import reserved_manifests
from elasticquota.controller.runner import build_registry, kopf_settings, make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import (
    MUTATE_POD,
    MUTATE_QUOTA,
    VALIDATE_POD,
    VALIDATE_QUOTA,
    Admission,
    QuotaMirror,
    RecentAdmissions,
    Registration,
    WebhookServer,
    cluster_view,
    in_cluster_namespace,
    pod_webhook_excluded_namespaces,
    register_webhooks,
)
from elasticquota.controller.webhooks.certs import self_signed_certificate, split_names
from elasticquota.controller.webhooks.identity import WORKLOADS, workload_webhooks
from elasticquota.core import keys
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.validation.labels import LABEL_VALUE_RULE
from elasticquota.core.validation.view import QuotaCatalog
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


@pytest.fixture
def webhook_settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(webhook_port=9443)


@pytest.fixture
def synced(state: ControllerState) -> ControllerState:
    state.mark_synced()
    return state


@pytest.fixture
def admission(synced: ControllerState, webhook_settings: Settings) -> Admission:
    return register_webhooks(kopf.OperatorRegistry(), synced, webhook_settings)


@pytest.fixture
def registry(synced: ControllerState, webhook_settings: Settings) -> kopf.OperatorRegistry:
    """The operator's Kopf registry, its webhooks over the synced memory."""
    return make_registry(synced, webhook_settings)


def refusal(call: Callable[[], None]) -> kopf.AdmissionError:
    with pytest.raises(kopf.AdmissionError) as caught:
        call()
    return caught.value


# -- registration ---------------------------------------------------------------------------------


#: The workload webhooks' ids (user limits: each stamps its pod template's identity).
WORKLOAD_IDS = [webhook for _, webhook, _ in workload_webhooks()]


def registered(state: ControllerState, settings: Settings) -> dict[str, Registration]:
    """The admission handlers the operator registers with Kopf, by id."""
    _, admission = build_registry(state, settings)
    return {} if admission is None else {each.id: each for each in admission.registered}


def test_webhooks_are_registered_only_when_a_port_is_set(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    assert registered(state, make_settings()) == {}
    assert kopf_settings(make_settings()).admission.server is None
    handlers = registered(state, make_settings(webhook_port=9443))
    assert sorted(handlers) == sorted(
        [VALIDATE_QUOTA, MUTATE_QUOTA, MUTATE_POD, VALIDATE_POD, *WORKLOAD_IDS]
    )
    assert [h.id for h in handlers.values() if not inspect.iscoroutinefunction(h.fn)] == []
    assert sorted(handlers[VALIDATE_QUOTA].operations) == ["CREATE", "DELETE", "UPDATE"]
    assert list(handlers[MUTATE_QUOTA].operations) == ["CREATE"]
    assert sorted(handlers[VALIDATE_POD].operations) == ["CREATE", "UPDATE"]
    assert list(handlers[MUTATE_POD].operations) == ["CREATE"]
    assert all(sorted(handlers[id_].operations) == ["CREATE", "UPDATE"] for id_ in WORKLOAD_IDS)
    mutating = [h.id for h in handlers.values() if h.mutating]
    assert mutating == [MUTATE_QUOTA, MUTATE_POD, *WORKLOAD_IDS]


def failure_policies(state: ControllerState, settings: Settings) -> dict[str, str]:
    return {
        handler.id: "Ignore" if handler.ignore_failures else "Fail"
        for handler in registered(state, settings).values()
    }


def test_quota_webhooks_fail_closed_and_pod_webhooks_fail_open_by_default(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    assert failure_policies(state, make_settings(webhook_port=1)) == {
        VALIDATE_QUOTA: "Fail", MUTATE_QUOTA: "Fail", VALIDATE_POD: "Ignore", MUTATE_POD: "Ignore",
        **dict.fromkeys(WORKLOAD_IDS, "Ignore"),
    }  # fmt: skip


@pytest.mark.parametrize("quotas", ["Fail", "Ignore"])
@pytest.mark.parametrize("pods", ["Fail", "Ignore"])
def test_each_kind_of_webhook_has_its_own_failure_policy(
    state: ControllerState, make_settings: Callable[..., Settings], quotas: str, pods: str
) -> None:
    settings = make_settings(
        webhook_port=1, webhook_failure_policy=quotas, pod_webhook_failure_policy=pods
    )
    assert failure_policies(state, settings) == {
        VALIDATE_QUOTA: quotas, MUTATE_QUOTA: quotas, VALIDATE_POD: pods, MUTATE_POD: pods,
        **dict.fromkeys(WORKLOAD_IDS, pods),
    }  # fmt: skip


def test_the_pod_webhooks_exclude_kube_system_the_operators_and_the_ignored_namespaces(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(lease_namespace="eq-system", ignore_namespaces=["batch"])
    assert pod_webhook_excluded_namespaces(settings, own_namespace="eq-pods") == (
        "batch", "eq-pods", "eq-system", "kube-system",
    )  # fmt: skip
    unset = make_settings(reserved_namespace="koordinator-system")
    assert pod_webhook_excluded_namespaces(unset, own_namespace="") == (
        "koordinator-system", "kube-system",
    )  # fmt: skip
    service_account = tmp_path / "namespace"
    assert in_cluster_namespace(service_account) is None
    service_account.write_text("eq-pods\n")
    assert in_cluster_namespace(service_account) == "eq-pods"


async def test_the_managed_configurations_keep_the_pod_webhooks_out_of_the_excluded_namespaces(
    state: ControllerState, make_settings: Callable[..., Settings]
) -> None:
    """What Kopf's configuration manager writes (to an emulated API server that has the quota,
    pod and workload resources, but no batch/v1beta1 CronJobs)."""
    settings = make_settings(
        webhook_port=free_port(), webhook_address="127.0.0.1", webhook_host="127.0.0.1",
        webhook_configuration="eq.example.dev", lease_namespace="eq-system",
    )  # fmt: skip
    discovered = {
        **DISCOVERED,
        **{f"{group}/v1/{plural}": kind for group, plural, kind in WORKLOADS},
    }
    async with serving(make_registry(state, settings), settings, discovered) as served:
        validating, mutating = await managed_webhooks(served.cluster, "eq.example.dev")
    selectors = {hook["name"]: hook.get("namespaceSelector") for hook in validating + mutating}
    excluded = list(pod_webhook_excluded_namespaces(settings))
    assert {"eq-system", "kube-system"} <= set(excluded)
    pod_selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded}
        ]
    }
    assert selectors == {
        "validate-elasticquota.eq.example.dev": None,
        "mutate-elasticquota.eq.example.dev": None,
        "validate-pod.eq.example.dev": pod_selector,
        "mutate-pod.eq.example.dev": pod_selector,
        **{f"{id_}.eq.example.dev": pod_selector for id_ in WORKLOAD_IDS[:-1]},
        f"{WORKLOAD_IDS[-1]}.eq.example.dev": None,  # batch/v1beta1: not served here
    }


def test_the_server_and_the_managed_configurations_come_from_the_settings(
    make_settings: Callable[..., Settings],
) -> None:
    tuned = kopf_settings(
        make_settings(webhook_port=9443, webhook_address="127.0.0.1", webhook_host="eq.svc")
    )
    server = tuned.admission.server
    assert isinstance(server, WebhookServer)
    assert (server.addr, server.port, server.host) == ("127.0.0.1", 9443, "eq.svc")
    assert (server.certfile, server.pkeyfile, server.cafile) == (None, None, None)
    assert tuned.admission.managed == "elastic-quota-operator.elasticquota.dev"
    unmanaged = kopf_settings(make_settings(webhook_port=9443, webhook_configuration=""))
    assert unmanaged.admission.managed is None


def test_a_provided_certificate_is_used_as_is(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(
        webhook_port=9443, webhook_cert_file="/tls/tls.crt", webhook_key_file="/tls/tls.key",
        webhook_ca_file="/tls/ca.crt",
    )  # fmt: skip
    server = kopf_settings(settings).admission.server
    assert (server.certfile, server.pkeyfile, server.cafile) == (
        "/tls/tls.crt", "/tls/tls.key", "/tls/ca.crt",
    )  # fmt: skip
    with pytest.raises(ValueError, match="both or neither"):
        make_settings(webhook_port=9443, webhook_cert_file="/tls/tls.crt")


# -- decisions over the memory --------------------------------------------------------------------


def test_a_broken_quota_is_refused_with_403_and_every_message(
    admission: Admission, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5", "memory": "-1"}, max={"cpu": "4", "memory": "1Gi"})
    error = refusal(lambda: admission.validate_quota("CREATE", broken, None))
    assert error.code == 403
    assert str(error) == (
        "q quota.Spec.Min's value < 0, in dimensions :[memory] (memory=-1); "
        "resourceKey cpu of quota q min 5 > max 4"
    )


def test_what_was_just_admitted_is_seen_until_the_watch_delivers_it(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    parent = k8s.quota("dept", min={"cpu": "4"}, max={"cpu": "8"}, is_parent=True)
    admission.validate_quota("CREATE", parent, None)
    child = k8s.quota("team", min={"cpu": "2"}, max={"cpu": "8"}, parent="dept")
    admission.validate_quota("CREATE", child, None)  # the parent is not in memory yet
    assert len(admission.recent) == 2
    greedy = k8s.quota("greedy", min={"cpu": "3"}, max={"cpu": "8"}, parent="dept")
    error = refusal(lambda: admission.validate_quota("CREATE", greedy, None))
    assert "parent: dept (sum of its children's min with greedy: cpu 5" in str(error)
    synced.on_quota(parent)
    synced.on_quota(child)
    admission.view()
    assert len(admission.recent) == 0  # the memory is the truth again
    admission.validate_quota("DELETE", child, child)
    admission.validate_quota("CREATE", child, None)  # deleted a moment ago: the name is free


def test_the_view_follows_the_memory(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("dept", min={"cpu": "4"}, is_parent=True))
    assert admission.view().quota("dept") is not None
    synced.on_quota(k8s.quota("dept", min={"cpu": "2"}, is_parent=True))
    dept = admission.view().quota("dept")
    assert dept is not None and dept.min == {"cpu": 2000}
    synced.on_quota_deleted(k8s.quota("dept"))
    assert admission.view().quota("dept") is None


class NoWalks(dict[Any, Any]):
    """A dict that refuses to be walked or copied whole."""

    def __iter__(self) -> Any:
        raise AssertionError("walked every quota")

    def items(self) -> Any:
        raise AssertionError("walked every quota")

    def values(self) -> Any:
        raise AssertionError("walked every quota")

    def keys(self) -> Any:
        raise AssertionError("walked every quota")


class RecordingCatalog(QuotaCatalog):
    """A catalog that notes the name of every quota it indexes."""

    def __init__(self) -> None:
        super().__init__()
        self.indexed: list[str] = []

    def upsert(self, source: Quota | Mapping[str, Any]) -> None:
        self.indexed.append(
            source.name if isinstance(source, Quota) else source["metadata"]["name"]
        )
        super().upsert(source)


def recorded_mirror(
    state: ControllerState, k8s: Bodies, quotas: int
) -> tuple[QuotaMirror, list[str]]:
    """A mirror of ``state`` (as a request's admission keeps it) and the quotas it indexes, once
    ``quotas`` quotas ``q0``, ``q1``... are in memory (not yet indexed)."""
    catalog = RecordingCatalog()
    mirror = QuotaMirror(state, RecentAdmissions(), catalog)
    for index in range(quotas):
        state.on_quota(k8s.quota(f"q{index}", max={"cpu": "1"}))
    return mirror, catalog.indexed


def test_a_request_reindexes_only_the_quotas_changed_since_the_last_one(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=50)
    cluster_view(mirror, synced)
    synced.quotas = NoWalks(synced.quotas)  # a request must not walk all the quotas
    indexed.clear()
    cluster_view(mirror, synced)
    assert indexed == []
    synced.on_quota(k8s.quota("q7", max={"cpu": "2"}))
    synced.on_quota_deleted(k8s.quota("q8"))
    view = cluster_view(mirror, synced)
    assert indexed == ["q7"]
    assert view.quota("q8") is None and view.quota("q9") is not None


def test_the_catalog_holds_the_quotas_the_reader_read(synced: ControllerState, k8s: Bodies) -> None:
    """The webhooks judge against the memory's own ``Quota`` objects: nothing is read twice."""
    mirror, _ = recorded_mirror(synced, k8s, quotas=3)
    view = cluster_view(mirror, synced)
    assert view.quota_at("team", "q1") is synced.quotas[("team", "q1")]


async def test_a_request_during_a_follow_takes_on_only_what_it_has_not_reached(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=6)
    following = asyncio.create_task(mirror.follow(size=2))
    await asyncio.sleep(0)  # the follow indexed the two oldest changes, then yielded
    assert indexed == ["q0", "q1"]
    view = cluster_view(mirror, synced)  # a request meanwhile: the rest, not the whole log again
    assert indexed[:2] == ["q0", "q1"] and sorted(indexed[2:]) == ["q2", "q3", "q4", "q5"]
    await following
    assert len(indexed) == 6  # nothing indexed twice
    assert all(view.quota(f"q{index}") is not None for index in range(6))


async def test_the_catalog_is_built_ahead_of_the_first_request_in_slices(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=12)
    _, yields = await yields_during(mirror.follow(size=5))
    assert yields >= 2  # other tasks ran between the slices
    indexed.clear()
    view = cluster_view(mirror, synced)
    assert indexed == []  # the first request found everything indexed
    assert view.quota("q11") is not None


def test_an_expired_admission_gives_way_to_the_memory(synced: ControllerState, k8s: Bodies) -> None:
    now = [0.0]
    recent = RecentAdmissions(ttl=30.0, clock=lambda: now[0])
    mirror = QuotaMirror(synced, recent)
    synced.on_quota(k8s.quota("kept", max={"cpu": "1"}))
    mirror.refresh()
    recent.remember(synced, ("team", "kept"), None)  # admitted: deleted
    recent.remember(synced, ("team", "new"), k8s.quota("new"))  # admitted: created
    catalog = mirror.refresh()
    assert catalog.quota_at("team", "kept") is None
    assert catalog.quota_at("team", "new") is not None
    now[0] = 31.0  # the watch never delivered either: the memory is the truth again
    catalog = mirror.refresh()
    assert catalog.quota_at("team", "kept") is not None
    assert catalog.quota_at("team", "new") is None


def test_recent_admissions_expire(synced: ControllerState, k8s: Bodies) -> None:
    now = [0.0]
    recent = RecentAdmissions(ttl=30.0, clock=lambda: now[0])
    recent.remember(synced, ("team", "q"), k8s.quota("q"))
    assert list(recent.overlay(synced)) == [("team", "q")]
    now[0] = 31.0
    assert recent.overlay(synced) == {}


def test_a_dry_run_is_judged_but_not_remembered(admission: Admission, k8s: Bodies) -> None:
    admission.validate_quota("CREATE", k8s.quota("q"), None, dryrun=True)
    assert len(admission.recent) == 0


def test_before_the_initial_listing_fail_refuses_and_ignore_abstains(
    state: ControllerState, make_settings: Callable[..., Settings], k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    closed = register_webhooks(kopf.OperatorRegistry(), state, make_settings(webhook_port=1))
    error = refusal(lambda: closed.validate_quota("CREATE", broken, None))
    assert error.code == 503
    assert "still loading" in str(error)
    opened = register_webhooks(
        kopf.OperatorRegistry(),
        state,
        make_settings(webhook_port=1, webhook_failure_policy="Ignore"),
    )
    opened.validate_quota("CREATE", broken, None)  # no error: let through, as if unreachable


def test_before_the_initial_listing_pods_follow_their_own_policy(
    state: ControllerState, make_settings: Callable[..., Settings], k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("dept", is_parent=True))
    pod = k8s.pod("p", quota="dept")
    opened = register_webhooks(kopf.OperatorRegistry(), state, make_settings(webhook_port=1))
    opened.validate_pod("CREATE", pod, None)  # quotas Fail, pods Ignore: the pod is let through
    closed = register_webhooks(
        kopf.OperatorRegistry(),
        state,
        make_settings(webhook_port=1, pod_webhook_failure_policy="Fail"),
    )
    assert refusal(lambda: closed.validate_pod("CREATE", pod, None)).code == 503


@pytest.mark.parametrize(
    ("namespace", "options"),
    [
        ("batch", {"ignore_namespaces": ["batch"]}),
        ("kube-system", {}),
        ("eq-system", {"lease_namespace": "eq-system"}),
    ],
)
def test_pods_of_ignored_system_and_own_namespaces_are_not_checked(
    synced: ControllerState,
    make_settings: Callable[..., Settings],
    k8s: Bodies,
    namespace: str,
    options: dict[str, Any],
) -> None:
    synced.on_quota(k8s.quota("dept", is_parent=True))
    pod = k8s.pod("p", namespace=namespace, quota="dept")
    checked = register_webhooks(
        kopf.OperatorRegistry(), synced, make_settings(webhook_port=1, lease_namespace="other")
    )
    if namespace != "kube-system":
        error = refusal(lambda: checked.validate_pod("CREATE", pod, None))
        assert str(error) == "pod can not be linked to a parentQuotaGroup,quota:dept, pod:p"
    skipping = register_webhooks(
        kopf.OperatorRegistry(), synced, make_settings(webhook_port=1, **options)
    )
    skipping.validate_pod("CREATE", pod, None)


def test_deleting_a_quota_checks_the_pods_in_memory(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    team = k8s.quota("team-a", max={"cpu": "8"})
    synced.on_quota(team)
    synced.on_pod(k8s.pod("p1", quota="team-a", requests={"cpu": "1"}))
    error = refusal(lambda: admission.validate_quota("DELETE", team, team))
    assert str(error) == "delete quota failed, quota team-a has 1 child pods: team/p1"
    synced.on_pod_deleted(k8s.pod("p1"))
    admission.validate_quota("DELETE", team, team)


def test_the_operators_own_reserved_quotas_are_admitted(admission: Admission) -> None:
    for manifest in reserved_manifests("koordinator-system"):
        patch = kopf.Patch()
        admission.mutate_quota(manifest, patch)
        mutated = json.loads(json.dumps(manifest))
        for key, value in (patch.get("metadata") or {}).items():
            mutated["metadata"].setdefault(key, {}).update(value)
        admission.validate_quota("CREATE", mutated, None)


# -- the AdmissionReview round trip through Kopf ---------------------------------------------------


async def test_kopf_answers_a_refusal_with_the_message(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    answer = await admission_review(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=broken
    )
    assert answer["allowed"] is False
    assert answer["status"] == {"message": "resourceKey cpu of quota q min 5 > max 4", "code": 403}


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str, bool]]:
    """(logger, level, message, with a traceback) of every record."""
    return [
        (record.name, record.levelname, record.getMessage(), record.exc_info is not None)
        for record in caplog.records
    ]


async def test_a_refusal_is_logged_once_at_info_on_one_line(
    registry: kopf.OperatorRegistry, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    """Normal operation: the object and the rule at INFO; not Kopf's ERROR echo as well."""
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    broken["metadata"]["labels"][keys.LABEL_PARENT] = "d\u00e9pt"  # refused when defaulted
    caplog.set_level(logging.DEBUG)
    for webhook in (VALIDATE_QUOTA, MUTATE_QUOTA):
        answer = await admission_review(
            registry, webhook, QUOTA_RESOURCE, operation="CREATE", object=broken
        )
        assert answer["allowed"] is False
    # Warnings and errors of any logger; INFO of ours and of Kopf's per-object logger (where it
    # would echo a handler's error), not of the embedded Kopf's start and stop or its access log.
    shown = [
        record
        for record in logged(caplog)
        if record[1] not in ("DEBUG", "INFO")
        or (record[1] == "INFO" and record[0].startswith(("elasticquota.", "kopf.objects")))
    ]
    label = f"quota q: label {keys.LABEL_PARENT} has an invalid value 'd\u00e9pt'"
    assert [(name, level, traceback) for name, level, _, traceback in shown] == [
        ("elasticquota.controller.webhooks", "INFO", False)
    ] * 2
    validated, defaulted = (message for _, _, message, _ in shown)
    namespace = broken["metadata"]["namespace"]
    assert validated.startswith(f"refused CREATE ElasticQuota {namespace}/q: ")
    assert validated.endswith(f"{label}: {LABEL_VALUE_RULE} [label-value]")
    assert "resourceKey cpu of quota q min 5 > max 4 [min-le-max]; " in validated
    assert defaulted == (
        f"refused CREATE ElasticQuota {namespace}/q (defaults): "
        f"{label}: {LABEL_VALUE_RULE} [label-value]"
    )
    assert all("\n" not in message for _, _, message, _ in shown)


class CorruptMemory(ControllerState):
    """A memory that fails when a request reads the quotas."""

    def quota_changes_since(self, sequence: int) -> list[tuple[str, str]]:
        raise RuntimeError("the memory is corrupt")


async def test_a_failing_handler_is_still_an_error_with_its_traceback(
    webhook_settings: Settings, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    corrupt = CorruptMemory(engine=QuotaEngine(EngineSettings()))
    corrupt.mark_synced()
    registry = make_registry(corrupt, webhook_settings)
    caplog.set_level(logging.INFO)
    answer = await admission_review(
        registry, VALIDATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=k8s.quota("q")
    )
    assert answer["allowed"] is False
    errors = [record for record in logged(caplog) if record[1] == "ERROR"]
    assert len(errors) == 1
    name, _, message, traceback = errors[0]
    assert (name, traceback) == ("kopf.objects", True)
    assert "the memory is corrupt" in message


def escaped(key: str) -> str:
    """A key as a JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


async def test_kopf_answers_a_create_with_the_defaults_as_a_json_patch(
    synced: ControllerState, registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("dept", is_parent=True, labels={keys.LABEL_TREE_ID: "t1"}))
    created = k8s.quota("team", max={"cpu": "2", "memory": "4Gi"}, parent="dept")
    answer = await admission_review(
        registry, MUTATE_QUOTA, QUOTA_RESOURCE, operation="CREATE", object=created
    )
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(answer["patch"]))
    assert sorted(operations, key=lambda op: op["path"]) == [
        {"op": "add", "path": f"/metadata/annotations/{escaped(keys.ANNO_SHARED_WEIGHT)}",
         "value": '{"cpu":"2","memory":"4Gi"}'},
        {"op": "add", "path": f"/metadata/labels/{escaped(keys.LABEL_TREE_ID)}", "value": "t1"},
    ]  # fmt: skip


async def test_kopf_answers_a_pod_label_change_with_the_message(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    old = k8s.pod("p", quota="team")
    new = json.loads(json.dumps(old))
    new["metadata"]["labels"][keys.POD_LABEL_PREEMPTIBLE] = "false"
    answer = await admission_review(
        registry, VALIDATE_POD, POD_RESOURCE, operation="UPDATE", object=new, oldObject=old
    )
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith("Preemptible label is forbidden modify now.")


async def test_kopf_lets_a_status_write_through_untouched(
    registry: kopf.OperatorRegistry, k8s: Bodies
) -> None:
    broken = k8s.quota("q", min={"cpu": "5"}, max={"cpu": "4"})
    answer = await admission_review(
        registry,
        VALIDATE_QUOTA,
        QUOTA_RESOURCE,
        operation="UPDATE",
        subResource="status",
        object=broken,
        oldObject=broken,
    )
    assert answer["allowed"] is True


# -- the certificate ------------------------------------------------------------------------------


def test_the_self_signed_certificate_names_every_host_and_loads() -> None:
    cert_pem, key_pem = self_signed_certificate(["eq.svc", "127.0.0.1", "0.0.0.0", "eq.svc"])
    certificate = x509.load_pem_x509_certificate(cert_pem)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["eq.svc"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert certificate.issuer == certificate.subject  # its own CA: the caBundle is itself
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        client = ssl.create_default_context(cadata=cert_pem.decode())
        assert client.cert_store_stats()["x509_ca"] == 1


def test_the_server_makes_its_certificate_without_kopfs_extras() -> None:
    cert_pem, key_pem = WebhookServer.build_certificate(["localhost", "127.0.0.1"], "secret")
    assert b"ENCRYPTED PRIVATE KEY" in key_pem
    assert x509.load_pem_x509_certificate(cert_pem).subject.rfc4514_string() == "CN=localhost"


def test_unspecified_addresses_are_not_names() -> None:
    assert split_names(["0.0.0.0", "::", "a", "::1"]) == (["a"], [ipaddress.ip_address("::1")])
    with pytest.raises(ValueError, match="at least one"):
        self_signed_certificate(["0.0.0.0"])


# -- the admission gate on new pods ---------------------------------------------------------------


async def gate_answer(state: ControllerState, settings: Settings, pod: Any) -> dict[str, Any]:
    answer = await admission_review(
        make_registry(state, settings), MUTATE_POD, POD_RESOURCE, operation="CREATE", object=pod
    )
    assert answer["allowed"] is True
    return answer


def added_gates(answer: dict[str, Any]) -> Any:
    operations = json.loads(base64.b64decode(answer["patch"])) if answer.get("patch") else []
    return [op["value"] for op in operations if op["path"] == "/spec/schedulingGates"]


async def test_a_new_pod_of_a_managed_quota_gets_the_admission_gate(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("team"))
    synced.gates_supported = True
    answer = await gate_answer(synced, webhook_settings, k8s.pod("p", quota="team"))
    assert added_gates(answer) == [[{"name": ADMISSION_GATE}]]


async def test_no_gate_where_the_server_drops_it_or_for_unmanaged_pods(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("team"))
    pod = k8s.pod("p", quota="team")
    assert added_gates(await gate_answer(synced, webhook_settings, pod)) == []  # 1.20: no gates
    synced.gates_supported = True
    unmanaged = k8s.pod("q", "elsewhere")  # no quota: the default quota, which is not limited
    assert added_gates(await gate_answer(synced, webhook_settings, unmanaged)) == []
    system = k8s.pod("s", "kube-system", quota="team")
    assert added_gates(await gate_answer(synced, webhook_settings, system)) == []
    bound = k8s.pod("b", quota="team", node="n1")
    assert added_gates(await gate_answer(synced, webhook_settings, bound)) == []


async def test_a_pod_of_a_profile_tree_is_sent_to_the_profiles_nodes(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies, worker: WorkerThreads
) -> None:
    """The quota changes before each pod made the topology stale: the webhook waits for its
    rebuild in a worker thread (every rebuild installed ran there), never rebuilds on the loop."""
    epoch = synced.engine.topology_epoch
    profile = k8s.profile(
        "gpu-pool",
        quota_name="gpu-root",
        match_labels={"pool": "gpu"},
        labels={keys.LABEL_TREE_ID: "t1"},
    )
    synced.on_profile(profile)
    synced.on_quota(k8s.quota("gpu-root", is_parent=True, labels={keys.LABEL_TREE_ID: "t1"}))
    synced.on_quota(k8s.quota("trainers", parent="gpu-root"))  # inherits tree t1
    answer = await gate_answer(synced, webhook_settings, k8s.pod("p", quota="trainers"))
    operations = json.loads(base64.b64decode(answer["patch"]))
    (affinity,) = [op["value"] for op in operations if op["path"] == "/spec/affinity"]
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
        ]
    }
    default_tree_pod = k8s.pod("q", quota="team")
    synced.on_quota(k8s.quota("team"))
    answer = await gate_answer(synced, webhook_settings, default_tree_pod)
    assert synced.engine.topology_epoch - epoch == worker.names("compute_rebuild") == 2
    assert "patch" not in answer or all(
        op["path"] != "/spec/affinity" for op in json.loads(base64.b64decode(answer["patch"]))
    )
