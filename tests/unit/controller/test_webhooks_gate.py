"""The admission webhooks' gate on new pods (the pod mutating webhook, through Kopf).

Rules (controller/webhooks/): a new pod of a managed quota gets the admission gate where the API
server keeps scheduling gates; an unmanaged pod, a pod of kube-system and a bound pod get none; a
pod of a profile tree is sent to the profile's nodes, the topology rebuilt in a worker thread; an
update decides the pod's identity alone.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import TYPE_CHECKING, Any

from admission_reviews import POD_RESOURCE, admission_review

from elasticquota.controller.runner import make_registry
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import MUTATE_POD
from elasticquota.core import keys
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads


async def gate_answer(state: ControllerState, settings: Settings, pod: Any) -> dict[str, Any]:
    answer = await admission_review(
        make_registry(state, settings), MUTATE_POD, POD_RESOURCE, operation="CREATE", object=pod
    )
    assert answer["allowed"] is True
    return answer


def patch_operations(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations of the JSON patch an answer carries (a ``KeyError`` if it carries none)."""
    operations: list[dict[str, Any]] = json.loads(base64.b64decode(answer["patch"]))
    return operations


def added_gates(answer: dict[str, Any]) -> Any:
    operations = patch_operations(answer) if answer.get("patch") else []
    return [op["value"] for op in operations if op["path"] == "/spec/schedulingGates"]


def profile_tree(
    state: ControllerState,
    k8s: Bodies,
    profile: str,
    match_labels: dict[str, str],
    *,
    tree_id: str,
    root: str,
    leaf: str,
) -> None:
    """The profile ``profile`` of the nodes ``match_labels`` selects, with its tree ``tree_id``:
    the root quota ``root`` and ``leaf`` under it (which inherits the tree)."""
    tree = {keys.LABEL_TREE_ID: tree_id}
    state.on_profile(k8s.profile(profile, quota_name=root, match_labels=match_labels, labels=tree))
    state.on_quota(k8s.quota(root, is_parent=True, labels=tree))
    state.on_quota(k8s.quota(leaf, parent=root))


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
    profile_tree(
        synced, k8s, "gpu-pool", {"pool": "gpu"}, tree_id="t1", root="gpu-root", leaf="trainers"
    )
    answer = await gate_answer(synced, webhook_settings, k8s.pod("p", quota="trainers"))
    operations = patch_operations(answer)
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
        op["path"] != "/spec/affinity" for op in patch_operations(answer)
    )


async def bobs_update(
    synced: ControllerState, settings: Settings, before: dict[str, Any], after: dict[str, Any]
) -> list[dict[str, Any]]:
    """The JSON patch mutate-pod admits bob's (untrusted) UPDATE of pod ``before`` with."""
    answer = await admission_review(
        make_registry(synced, settings), MUTATE_POD, POD_RESOURCE, operation="UPDATE",
        object=after, oldObject=before, userInfo={"username": "bob"},
    )  # fmt: skip
    assert answer["allowed"] is True
    return patch_operations(answer)


async def test_an_update_of_a_pod_puts_back_an_identity_changed_by_its_author_and_nothing_more(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    """Pod UPDATEs reach the pod mutating webhook for the identity alone: a user who may update
    pods would otherwise move one to another user's limits; no gate nor affinity is added (the
    API refuses new gates on an existing pod)."""
    synced.on_quota(k8s.quota("team"))
    synced.gates_supported = True
    before = k8s.pod("p", quota="team")
    before["metadata"]["annotations"] = {keys.ANNO_USER_INFO: '{"user":"sue"}'}
    after = copy.deepcopy(before)
    after["metadata"]["annotations"][keys.ANNO_USER_INFO] = '{"user":"bob"}'
    operations = await bobs_update(synced, webhook_settings, before, after)
    assert [(op["path"], op["value"]) for op in operations] == [
        ("/metadata/annotations/elasticquota.dev~1user-info", '{"user":"sue"}')
    ]


async def test_a_pod_whose_required_node_affinity_has_null_terms_gets_the_profiles_term(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    """``requiredDuringSchedulingIgnoredDuringExecution: {}`` reaches the webhook with
    ``nodeSelectorTerms: null``: the pod is admitted with the profile's term (the reference adds
    one), not answered with a failed webhook (500)."""
    profile_tree(
        synced, k8s, "gpu-pool", {"pool": "gpu"}, tree_id="t1", root="gpu-root", leaf="trainers"
    )
    pod = k8s.pod("p", quota="trainers")
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    pod["spec"]["affinity"] = {"nodeAffinity": {required: {"nodeSelectorTerms": None}}}
    answer = await gate_answer(synced, webhook_settings, pod)
    operations = patch_operations(answer)
    assert [op["value"] for op in operations if op["path"].startswith("/spec/affinity")] == [
        [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]
    ]


async def test_an_update_adding_our_identity_over_a_yunikorn_one_is_answered_with_its_removal(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    """Our key is read before YuniKorn's: added by an untrusted requester it is removed, so that
    the pod keeps counting for sue (not set to the requester's own identity)."""
    before = k8s.pod("p", quota="team")
    before["metadata"]["annotations"] = {"yunikorn.apache.org/user.info": '{"user":"sue"}'}
    after = copy.deepcopy(before)
    after["metadata"]["annotations"][keys.ANNO_USER_INFO] = '{"user":"alice"}'
    operations = await bobs_update(synced, webhook_settings, before, after)
    assert operations == [
        {"op": "remove", "path": "/metadata/annotations/elasticquota.dev~1user-info"}
    ]


async def test_a_pod_of_a_profile_of_every_node_keeps_its_affinity(
    synced: ControllerState, webhook_settings: Settings, k8s: Bodies
) -> None:
    """A profile with ``nodeSelector: {}`` runs its tree on every node: its pods get no required
    node affinity (an empty term would match no node: the pod could never be scheduled)."""
    profile_tree(synced, k8s, "all", {}, tree_id="t2", root="all-root", leaf="anywhere")
    answer = await gate_answer(synced, webhook_settings, k8s.pod("p", quota="anywhere"))
    operations = patch_operations(answer)
    assert [op["path"] for op in operations if op["path"].startswith("/spec/affinity")] == []
