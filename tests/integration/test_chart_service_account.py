"""The operator as the chart's Deployment starts it, under the chart's ServiceAccount (its rendered
RBAC applied, a token of the TokenRequest API in its kubeconfig) instead of the session's admin
token: the least-privilege roles suffice for every write path (ready, leader, reserved quotas,
annotations and status.used written, Events; a profile's root quota created and its tree-id label
written back; an over-used quota's pod evicted after the chart's ``operator.revocationDelay``; no
403 in ``elastic_quota_api_errors_total`` nor in the log) and are no more than that (no pod
deletion, no Secrets, no list or watch of namespaces).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from chart_helpers import (
    aggregated,
    applied,
    can_i,
    fresh_namespace,
    get_json,
    kubectl,
    one,
    pod,
    quota,
    render,
    run,
)
from chart_pod import Pod, operator_values, running, wait_for_lease, wait_ready
from chart_render import Manifest
from harness import eventually
from profile_bodies import profile_body
from prometheus_client.parser import text_string_to_metric_families

from elasticquota.controller.metrics.names import API_ERRORS, EVICTED, EVICTIONS, OVER_USE
from elasticquota.core import keys

pytestmark = pytest.mark.timeout(600)

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def service_account_kubeconfig(namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig for the session's server and CA with a TokenRequest token of this
    ServiceAccount (``kubectl create token``) instead of the admin token."""
    token = run(kubectl(), "create", "token", name, "-n", namespace, "--duration=1h").strip()
    claims = token.split(".")[1]
    subject = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"]
    assert subject == f"system:serviceaccount:{namespace}:{name}", subject
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    (user,) = config["users"]
    user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def counter(exposition: str, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """The samples of counter ``name`` by these labels' values, from a /metrics exposition."""
    return {
        tuple(sample.labels[label] for label in labels): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name
    }


# A profile tree of the test's own for the profile and revocation write paths: one Node, labelled
# for this run only, selected by an ElasticQuotaProfile, deleted after. Its root is labelled
# ignore-default-tree: the node's cpu is then not taken out of the default tree's total, which
# would otherwise become 0 (no other node) instead of absent, and the team quota's 500m pod
# (default tree) would be over its runtime and revoked too.
POOL_CPU = "4"
REVOCATION_DELAY = 1  # seconds (the chart's operator.revocationDelay; 120 by default)


def pool_node(name: str, labels: dict[str, str]) -> Manifest:
    """A Ready Node with POOL_CPU cpu, as a kubelet registers it (status set on creation)."""
    resources = {"cpu": POOL_CPU, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def profile_of_pool(namespace: str, root: str, selector: dict[str, str]) -> Manifest:
    """The profile ``pool`` that makes ``root`` the root of the selected nodes' tree."""
    labels = {keys.LABEL_IS_PARENT: "true", keys.LABEL_IGNORE_DEFAULT_TREE: "true"}
    return profile_body(
        "pool", namespace, quota_name=root, match_labels=selector, quota_labels=labels
    )


@contextlib.contextmanager
def cluster_node(node: Manifest) -> Iterator[None]:
    """``node`` in the cluster, deleted after: it is cluster-scoped."""
    run(kubectl(), "create", "--filename=-", stdin=yaml.safe_dump(node))
    try:
        yield
    finally:
        run(kubectl(), "delete", "node", node["metadata"]["name"], "--ignore-not-found")


def quota_pod(name: str, namespace: str, quota_name: str, cpu: str, node: str | None) -> Manifest:
    """A pod of ``quota_name`` (by label) requesting ``cpu``: bound to ``node``, else pending."""
    body = pod(name, namespace)
    body["metadata"]["labels"] = {keys.POD_LABEL_QUOTA: quota_name}
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    if node is not None:
        body["spec"]["nodeName"] = node
    return body


def over_use(namespace: str, root: str, node: str) -> tuple[list[Manifest], str, list[str]]:
    """Under the profile's root (POOL_CPU = 4 cpu), ``lender`` and ``borrower``, min 2 max 4
    each. The borrower runs two 1500m pods on the node (used 3) while the lender asks for its min
    (a pending 2-cpu pod): the borrower's runtime is 2, below its used, and one of its pods must
    go. Returns the objects, the borrower's name and its pods' names."""
    lender, borrower = f"{root}-lender", f"{root}-borrower"
    quotas = [quota(name, namespace, "2", POOL_CPU) for name in (lender, borrower)]
    for body in quotas:
        body["metadata"]["labels"] = {keys.LABEL_PARENT: root}
    running_pods = [
        quota_pod(f"{borrower}-{i}", namespace, borrower, "1500m", node) for i in (1, 2)
    ]
    waiting = quota_pod(f"{lender}-1", namespace, lender, "2", None)
    names = [body["metadata"]["name"] for body in running_pods]
    return [*quotas, *running_pods, waiting], borrower, names


def refuse_forbidden(operator: Pod) -> None:
    """Fail at once, rather than at a wait's timeout, once the API server has refused a request
    of the operator (its warnings say "forbidden")."""
    if "forbidden" in operator.log.read_text(errors="replace").lower():
        raise AssertionError("the API server refused a request of the operator (403)")


async def wait_for_profile_root(
    operator: Pod, namespace: str, name: str, root: str
) -> tuple[Manifest, Manifest]:
    """The profile's root quota, created by the operator, and the profile once the operator has
    written the tree-id label back onto it."""
    found: dict[str, Manifest] = {}

    def written() -> bool:
        refuse_forbidden(operator)
        quotas = get_json("elasticquotas", "-n", namespace)["items"]
        found.update({body["metadata"]["name"]: body for body in quotas})
        found[name] = get_json("elasticquotaprofiles", name, "-n", namespace)
        return root in found and keys.LABEL_TREE_ID in (found[name]["metadata"].get("labels") or {})

    what = f"the root quota {root} and the tree-id label of the profile {name}"
    try:
        await eventually(written, timeout=60, what=what)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(found, indent=1)}") from None
    return found[root], found[name]


async def wait_for_eviction(operator: Pod, namespace: str) -> set[str]:
    """The pods of ``namespace`` being deleted (a deletionTimestamp), once there are some."""
    terminating: set[str] = set()

    def evicted() -> bool:
        refuse_forbidden(operator)
        pods = get_json("pods", "-n", namespace)["items"]
        terminating.clear()
        terminating.update(
            body["metadata"]["name"] for body in pods if body["metadata"].get("deletionTimestamp")
        )
        return bool(terminating)

    await eventually(evicted, timeout=60, what=f"an eviction in {namespace}")
    return terminating


async def test_operator_runs_under_the_charts_service_account(
    namespace: str, tmp_path: Path
) -> None:
    """The rendered RBAC is enough for everything the operator does, and is not cluster-admin.

    Every write path runs: the reserved quotas (created here if missing, accepted if another
    test's operator made them: the session shares them), a quota's annotations and status, an
    Event, a profile's root quota and its tree-id label, and a revocation (an eviction, the
    over-use timer on the quota, Events) after the chart's ``operator.revocationDelay``, set to
    REVOCATION_DELAY for this run. A release name of its own: the ClusterRole and
    ClusterRoleBinding (named after the release) cannot meet another test's."""
    release = f"eq-rbac-{uuid.uuid4().hex[:6]}"
    values = {**operator_values(), "operator": {"revocationDelay": REVOCATION_DELAY}}
    manifests = render(namespace, values, release=release)
    operator = Pod(manifests, tmp_path)
    account = one(manifests, "ServiceAccount")["metadata"]["name"]
    assert operator.spec["serviceAccountName"] == account
    assert operator.environment()["ELASTIC_QUOTA_REVOCATION_DELAY"] == str(REVOCATION_DELAY)
    user = f"system:serviceaccount:{namespace}:{account}"
    reserved = operator.environment()["ELASTIC_QUOTA_RESERVED_NAMESPACE"]
    team = quota_name = f"{release}-team"  # a quota named like its namespace: the pods' quota
    pool, root = f"{release}-pool", f"{release}-root"  # the profile's namespace, its root quota
    selector = {"elasticquota.dev/test-pool": release}
    node = pool_node(f"{release}-pool-node", selector)
    rbac = [
        body for body in manifests if body["kind"] in RBAC_KINDS and not aggregated(body)
    ]  # the operator's own (the users' aggregated roles: test_chart_aggregated_roles.py)
    assert sorted(body["kind"] for body in rbac) == sorted(RBAC_KINDS)

    with applied(rbac), fresh_namespace(team), fresh_namespace(pool), cluster_node(node):
        # The profile is there before the operator starts: it creates the root at once.
        run(
            kubectl(), "apply", "--filename=-",
            stdin=yaml.safe_dump(profile_of_pool(pool, root, selector)),
        )  # fmt: skip
        kubeconfig = service_account_kubeconfig(namespace, account, tmp_path / "kubeconfig")
        # Not cluster-admin: no pod deletion, no Secrets (the webhook key's among them), no
        # reading of namespaces (nothing of the operator lists or watches them).
        for verb, resource, where in [
            ("delete", "pods", team), ("get", "secrets", namespace), ("list", "secrets", team),
            ("list", "namespaces", team), ("watch", "namespaces", team),
            ("update", "elasticquotas.scheduling.sigs.k8s.io", team),
            ("delete", "leases.coordination.k8s.io", namespace),
        ]:  # fmt: skip
            assert not can_i(verb, resource, user, where), f"{user} may {verb} {resource}"
        refused = subprocess.run(
            [kubectl(), "get", "secrets", "-n", namespace, f"--kubeconfig={kubeconfig}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "Forbidden" in refused.stderr, refused
        assert can_i("patch", "elasticquotas.scheduling.sigs.k8s.io", user, team, "status")

        with running(operator, kubeconfig):
            seconds = await wait_ready(operator)
            await wait_for_lease(operator)

            def reserved_exist() -> bool:
                quotas = get_json("elasticquotas", "-n", reserved)["items"]
                return set(keys.RESERVED_QUOTAS) <= {body["metadata"]["name"] for body in quotas}

            await eventually(reserved_exist, timeout=60, what=f"the reserved quotas in {reserved}")

            worker = pod(f"{quota_name}-worker", team)
            worker["spec"]["nodeName"] = f"{release}-node"  # bound: it counts in status.used
            worker["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
            broken = quota(f"{team}-broken", team, "3", "2")  # min > max: an Event on it
            team_objects = [quota(quota_name, team, "1", "2"), worker, broken]
            run(kubectl(), "apply", "--filename=-", stdin=yaml.safe_dump_all(team_objects))

            # Profiles: the root quota created, the tree-id label patched onto the profile.
            root_quota, pool_profile = await wait_for_profile_root(operator, pool, "pool", root)
            tree_id = pool_profile["metadata"]["labels"][keys.LABEL_TREE_ID]
            assert root_quota["metadata"]["labels"][keys.LABEL_TREE_ID] == tree_id
            assert root_quota["metadata"]["labels"][keys.LABEL_IS_ROOT] == "true"
            assert root_quota["spec"]["min"]["cpu"] == POOL_CPU, root_quota

            # Revocation, under the root: the borrower over its runtime from the start.
            pool_objects, borrower, borrower_pods = over_use(pool, root, node["metadata"]["name"])
            run(kubectl(), "apply", "--filename=-", stdin=yaml.safe_dump_all(pool_objects))

            body: Manifest = {}

            def written() -> bool:
                body.update(get_json("elasticquota", quota_name, "-n", team))
                annotations = body["metadata"].get("annotations") or {}
                used = (body.get("status") or {}).get("used") or {}
                return keys.ANNO_RUNTIME in annotations and used.get("cpu") == "500m"

            what = f"the runtime annotation and status.used of {quota_name}"
            try:
                await eventually(written, timeout=60, what=what)
            except AssertionError as error:
                raise AssertionError(f"{error}\n{json.dumps(body, indent=1)}") from None

            def warned() -> bool:
                events = get_json(
                    "events", "-n", team, "--field-selector=reason=InvalidElasticQuota"
                )
                names = {event["involvedObject"]["name"] for event in events["items"]}
                return broken["metadata"]["name"] in names

            await eventually(warned, timeout=30, what="the InvalidElasticQuota Event")

            evicted = await wait_for_eviction(operator, pool)
            assert len(evicted) == 1, evicted  # one 1500m pod: used 1500m, under the runtime
            (victim,) = evicted
            assert victim in borrower_pods, victim
            reasons: set[tuple[str, str]] = set()

            def revoked() -> bool:
                events = get_json("events", "-n", pool)["items"]
                reasons.update((e["involvedObject"]["name"], e["reason"]) for e in events)
                return {(victim, "Revoked"), (borrower, "QuotaOverUsed")} <= reasons

            await eventually(revoked, timeout=30, what="the Revoked and QuotaOverUsed Events")
            exposition = operator.http_body(operator.container_port("metrics"))
            errors = counter(exposition, API_ERRORS, "verb", "code")
            evictions = counter(exposition, EVICTIONS, "quota", "reason", "result")
            still_evicted = await wait_for_eviction(operator, pool)  # no later round took the other

        forbidden = {key: count for key, count in errors.items() if key[1] == "403"}
        log = operator.output()
        created = log.count("created reserved quota")
        print(
            f"ready after {seconds:.1f}s as {user}; reserved quotas created: {created} "
            f"(else already there); {quota_name}: "
            f"{body['metadata']['annotations'][keys.ANNO_RUNTIME]} runtime, "
            f"used {body['status']['used']}; profile root {root} (tree {tree_id}); "
            f"evicted {victim}; evictions by (quota, reason, result): {evictions}; "
            f"api errors by (verb, code): {errors or 'none'}"
        )
        assert not forbidden, f"403 from the API server: {forbidden}\n{log}"
        assert "forbidden" not in log.lower(), log  # Kopf's watches too (not in the metric)
        assert evictions == {(borrower, OVER_USE, EVICTED): 1}, evictions  # nothing else
        assert still_evicted == evicted, f"{still_evicted} evicted: one was enough"
