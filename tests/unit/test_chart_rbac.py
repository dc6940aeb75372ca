"""The operator's RBAC is what its code calls, both ways: every request it can make is granted, and
every granted verb is one it makes (least privilege), in each certificate mode and the plain
manifests (manifests/base).

The requests are found in the code, not listed by hand: every method of a kubernetes_asyncio API
class named in the operator's modules (``kube/`` and ``controller/``, AST), turned into its RBAC
verb, group, resource and subresource from the library's own path and HTTP method; and the
readers' collections (``controller.ingest``: list and watch). A custom-object method names no
resource: ``CUSTOM`` says which ones the operator sends it for, and a new one fails here until it
is said. A request that names its object is granted by name where the chart limits it
(``NAMED``), and some are made only in a mode (``ONLY_WITH``: the environment variable that turns
them on). Kopf needs nothing: with the Deployment's settings its posting, peering, scanning and
configuration management are off (``controller.runner.kopf_settings``, checked here too), and
``/version`` is open to every authenticated client.

Not the operator's requests: ``kube/apply.py`` (the demo's manifests, ``devtools``), ``cli/`` and
``plan/`` (run with the user's own credentials).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from chart_render import Manifest, helm_template, operator_environment, operator_settings
from kubernetes_asyncio import client
from repo_tools import ROOT

from elasticquota.controller import ingest
from elasticquota.controller.runner import kopf_settings
from elasticquota.kube.quotas import PROFILES, QUOTAS
from elasticquota.kube.readerparts import Kind

PACKAGE = ROOT / "operator" / "elasticquota"
SCANNED = ("kube", "controller")
NOT_THE_OPERATORS = {PACKAGE / "kube" / "apply.py"}
#: The resources each custom-object method is sent for (group, version, plural).
CUSTOM: dict[str, tuple[tuple[str, str, str], ...]] = {
    "create_namespaced_custom_object": (QUOTAS,),  # reserved quotas, profile roots
    "patch_namespaced_custom_object": (QUOTAS, PROFILES),  # figures, labels; the tree-id label
    "patch_namespaced_custom_object_status": (QUOTAS,),  # status.used where /status exists
    "list_cluster_custom_object": (QUOTAS,),  # kube.quotas.list_quotas
    "list_namespaced_custom_object": (QUOTAS,),  # kube.quotas.list_namespace_quotas
}
#: Resources the operator names, and the variable of the Deployment that holds the name.
NAMED = {
    "leases": "ELASTIC_QUOTA_LEASE_NAME",
    "secrets": "ELASTIC_QUOTA_WEBHOOK_CERT_SECRET",
    "validatingwebhookconfigurations": "ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION",
    "mutatingwebhookconfigurations": "ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION",
}
#: Resources the operator touches only when this variable of the Deployment is set.
ONLY_WITH = {
    "secrets": "ELASTIC_QUOTA_WEBHOOK_CERT_SECRET",
    "validatingwebhookconfigurations": "ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION",
    "mutatingwebhookconfigurations": "ELASTIC_QUOTA_WEBHOOK_CA_BUNDLE_CONFIGURATION",
}
#: Receivers in the scanned code that are the operator's own objects, not API clients, whose
#: methods share a name with one of the library's (``self.engine.delete_node``: the solver's).
OWN_RECEIVERS = {"self.engine"}
OPEN_TO_ALL = {"/version/"}
VERBS = {"POST": "create", "PATCH": "patch", "PUT": "update"}
CALL_API = re.compile(r"call_api\(\s*'(?P<path>[^']+)',\s*'(?P<method>[A-Z]+)'")


@dataclass(frozen=True, order=True)
class Need:
    """One permission a request needs (``resource`` with its ``/subresource``)."""

    verb: str
    group: str
    resource: str


def scanned_files() -> list[Path]:
    files = [path for part in SCANNED for path in sorted((PACKAGE / part).rglob("*.py"))]
    return [path for path in files if path not in NOT_THE_OPERATORS]


def api_classes() -> dict[str, type]:
    return {name: getattr(client, name) for name in dir(client) if name.endswith("Api")}


def names_used(files: list[Path]) -> tuple[set[str], set[str]]:
    """The API classes named in ``files`` and every attribute name they use."""
    classes, attributes = set(), set()
    known = api_classes()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) not in OWN_RECEIVERS:
                attributes.add(node.attr)
                if node.attr in known:
                    classes.add(node.attr)
    return classes, attributes


def api_calls() -> dict[str, tuple[str, str]]:
    """Each API method the operator's code names: its path template and HTTP method."""
    classes, attributes = names_used(scanned_files())
    found: dict[str, tuple[str, str]] = {}
    for name in sorted(classes):
        api = api_classes()[name]
        for method in attributes & set(vars(api)):
            info = getattr(api, f"{method}_with_http_info", None)
            if info is None:
                continue
            match = CALL_API.search(inspect.getsource(info))
            assert match, f"{name}.{method}: no call_api in the library's source"
            assert found.setdefault(method, (match["path"], match["method"])) == (
                match["path"],
                match["method"],
            ), f"{method}: two API classes the operator names differ"
    return found


def needs_of_path(method_name: str, path: str, http: str) -> Iterator[Need]:
    """The permissions of one request: ``/api/v1/namespaces/{namespace}/pods/{name}/status``
    PATCH is patch on pods/status of the core group."""
    parts = path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[:2] == ["namespaces", "{namespace}"] and len(rest) > 2:
        rest = rest[2:]
    named = len(rest) > 1 and rest[1] == "{name}"
    resource = "/".join([rest[0], *rest[2:]])
    if http == "GET":
        verb = "get" if named else "list"
    elif http == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = VERBS[http]
    if group != "{group}":
        yield Need(verb, group, resource)
        return
    assert method_name in CUSTOM, f"{method_name}: say in CUSTOM which resources it is sent for"
    for custom_group, _, plural in CUSTOM[method_name]:
        yield Need(verb, custom_group, resource.replace("{plural}", plural))


def reader_needs() -> set[Need]:
    """list and watch of every collection a reader of ``controller.ingest`` follows."""
    kinds = [value for value in vars(ingest).values() if isinstance(value, Kind)]
    assert len(kinds) == 4, kinds
    found = set()
    for kind in kinds:
        (need,) = needs_of_path("", kind.path, "GET")
        found |= {Need("list", need.group, need.resource), Need("watch", need.group, need.resource)}
    return found


def operator_needs() -> set[Need]:
    found = reader_needs()
    for method, (path, http) in api_calls().items():
        if path not in OPEN_TO_ALL:
            found.update(needs_of_path(method, path, http))
    return found


NEEDS = operator_needs()


def test_the_scan_finds_the_requests_the_operator_makes() -> None:
    """The scan itself: the writes, reads and the readers it must find (if it finds none of a
    kind, the comparisons below would prove nothing)."""
    assert {
        Need("get", "", "pods"),
        Need("patch", "", "pods/status"),
        Need("create", "", "pods/eviction"),
        Need("patch", "", "events"),
        Need("update", "coordination.k8s.io", "leases"),
        Need("patch", "scheduling.sigs.k8s.io", "elasticquotas/status"),
        Need("patch", "quota.koordinator.sh", "elasticquotaprofiles"),
        Need("watch", "", "nodes"),
        Need("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        Need("update", "", "secrets"),
    } <= NEEDS
    assert "get_code" in api_calls()  # /version: open to all
    assert not any(need.verb in ("delete", "deletecollection") for need in NEEDS)


@dataclass(frozen=True)
class Grant:
    """One verb of one rule bound to the operator's ServiceAccount."""

    need: Need
    names: tuple[str, ...]  # resourceNames; empty: any


def grants(manifests: list[Manifest]) -> set[Grant]:
    """The verbs of the roles bound to the Deployment's ServiceAccount."""
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    bound = {
        (binding["roleRef"]["kind"], binding["roleRef"]["name"])
        for binding in manifests
        if binding["kind"] in ("ClusterRoleBinding", "RoleBinding")
        for subject in binding["subjects"]
        if subject["kind"] == "ServiceAccount" and subject["name"] == account
    }
    found = set()
    for role in manifests:
        if (role["kind"], role["metadata"]["name"]) not in bound:
            continue
        for rule in role["rules"]:
            names = tuple(rule.get("resourceNames") or ())
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        found.add(Grant(Need(verb, group, resource), names))
    return found


def needs_in(env: dict[str, str]) -> set[Need]:
    """The requests this Deployment's operator makes (``ONLY_WITH``)."""
    gates = {need: ONLY_WITH.get(need.resource.split("/")[0]) for need in NEEDS}
    return {need for need, gate in gates.items() if gate is None or env.get(gate)}


def allowed(need: Need, granted: set[Grant], env: dict[str, str]) -> bool:
    name = env.get(NAMED.get(need.resource, ""), "")
    return any(
        grant.need == need and (not grant.names or (need.verb != "create" and name in grant.names))
        for grant in granted
    )


CHART_CASES: dict[str, Manifest] = {
    "operator": {},
    "certManager": {"webhooks": {"certificate": {"mode": "certManager"}}},
    "secret": {"webhooks": {"certificate": {"mode": "secret", "secretName": "my-webhook-tls"}}},
    "no webhooks": {"webhooks": {"enabled": False}},
    "renamed": {"fullnameOverride": "quotas", "operator": {"leaseName": "eq-leader"}},
}


def rendered(case: str) -> list[Manifest]:
    if case == "manifests/base":
        text = (ROOT / "manifests" / "base" / "operator.yaml").read_text()
        return [body for body in yaml.safe_load_all(text) if body]
    return helm_template(values=CHART_CASES[case])


CASES = [*CHART_CASES, "manifests/base"]


@pytest.mark.parametrize("case", CASES)
def test_every_request_of_the_operator_is_granted(case: str) -> None:
    manifests = rendered(case)
    env = operator_environment(manifests)
    granted = grants(manifests)
    missing = sorted(need for need in needs_in(env) if not allowed(need, granted, env))
    assert missing == [], f"the operator would be refused (403): {missing}"


@pytest.mark.parametrize("case", CASES)
def test_nothing_is_granted_that_the_operator_does_not_do(case: str) -> None:
    manifests = rendered(case)
    env = operator_environment(manifests)
    needed = needs_in(env)
    unused = sorted(
        (grant.need, grant.names) for grant in grants(manifests) if grant.need not in needed
    )
    assert unused == [], f"granted, never requested: {unused}"
    for grant in grants(manifests):
        if grant.names:  # limited to the names the operator is given, nothing else
            assert grant.names == (env[NAMED[grant.need.resource]],), grant


@pytest.mark.parametrize("case", CASES)
def test_the_named_objects_are_in_the_namespace_of_the_role(case: str) -> None:
    """The Lease and the certificate's Secret are in the pod's namespace, the Role's."""
    manifests = rendered(case)
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    variables = {each["name"]: each for each in container["env"]}
    field = variables["ELASTIC_QUOTA_LEASE_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert field == "metadata.namespace"
    roles = [body for body in manifests if body["kind"] == "Role"]
    assert roles and all(
        role["metadata"]["namespace"] == deployment["metadata"]["namespace"] for role in roles
    )
    namespaced = {"leases", "secrets"}
    cluster = [body for body in manifests if body["kind"] == "ClusterRole"]
    assert not any(
        namespaced & set(rule["resources"]) for role in cluster for rule in role["rules"]
    ), "the Lease and the Secret are granted in every namespace"


@pytest.mark.parametrize("case", ["operator", "no webhooks", "renamed", "manifests/base"])
def test_kopf_makes_no_request_of_its_own(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The premise of the rules: with the Deployment's settings Kopf posts no Events, keeps no
    peering objects, watches no CRDs nor namespaces and leaves the webhook configurations alone
    (the modes with certificate files are left out: their files are not here)."""
    settings = operator_settings(operator_environment(rendered(case)), monkeypatch)
    tuned = kopf_settings(settings)
    assert not tuned.posting.enabled
    assert tuned.peering.standalone
    assert tuned.scanning.disabled
    assert not tuned.admission.managed
