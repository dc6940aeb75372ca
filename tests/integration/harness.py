"""Helpers for the integration tier: operator processes, API calls, and the `plan` oracle.

The operator runs as a real subprocess (``python -m elasticquota run``), exactly as users start it,
so restarts and take-overs are real. "Correct" always means: what ``plan`` computes for the objects
the cluster holds right now.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from ports import free_port
from quota_bodies import quota_body

from elasticquota.cli.cluster_objects import cluster_manifests
from elasticquota.core.decisions.diff import quota_write
from elasticquota.core.userlimits.identity import Identity
from elasticquota.kube.apply import apply_manifest, apply_order
from elasticquota.kube.errors import raise_for_status
from elasticquota.kube.quotas import (
    QUOTA_GROUP,
    QUOTA_PLURAL,
    QUOTA_VERSION,
    list_quotas,
)
from elasticquota.kube.readerparts import Kind
from elasticquota.plan.compute import Plan, compute_plan
from elasticquota.plan.loader import load_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The user the identity and user-limit tests impersonate (fixtures ``as_sue``, ``sue_namespace``).
SUE = Identity("sue", ("dev",))


def unique(prefix: str) -> str:
    """A name no other test (nor an earlier run of this one) uses: ``prefix`` and six hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def stop_process(process: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM a still-running process (the operator releases its Lease), SIGKILL if it lingers."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


#: What an operator that could not bind its probes' or webhooks' port prints before it exits.
PORT_TAKEN = "address already in use"


class OperatorProcess:
    """``elastic-quota run`` as a subprocess, with its probes (and its webhooks, if it serves
    them) on free ports."""

    def __init__(
        self,
        identity: str,
        *extra: str,
        lease_duration: float = 3.0,
        env: dict[str, str] | None = None,
        as_pod: bool = False,
        webhooks: bool = False,
    ) -> None:
        """``env``: variables on top of this process's (e.g. a KUBECONFIG through a proxy);
        ``as_pod``: the identity comes from ``POD_NAME`` (as in the chart's pods), not a flag;
        ``webhooks``: it serves the admission webhooks on a port of its own."""
        self.identity = identity
        self.as_pod = as_pod
        self.env = env or {}
        self.port = free_port()
        self.webhook_port = free_port() if webhooks else 0
        self.extra = extra
        self.lease_duration = lease_duration
        self.log = Path(tempfile.mkstemp(prefix=f"operator-{identity}-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        env = {
            **os.environ,
            "ELASTIC_QUOTA_LEASE_DURATION": str(self.lease_duration),
            "ELASTIC_QUOTA_PROFILE_DEBOUNCE": "0.2",
            **({"POD_NAME": self.identity} if self.as_pod else {}),
            **self.env,
        }
        command = [
            sys.executable, "-m", "elasticquota", "run",
            "--metrics-port", str(self.port),
            *(["--webhook-port", str(self.webhook_port)] if self.webhook_port else []),
            "--reconcile-interval", "0.2",
            *([] if self.as_pod else ["--identity", self.identity]),
            "--log-level", "INFO",
            *self.extra,
        ]  # fmt: skip
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        return self

    def probe(self, path: str) -> dict[str, Any] | None:
        """The endpoint's JSON body, whatever its status (503 from ``/readyz`` included); None
        when the server does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as reply:
                body: dict[str, Any] = json.loads(reply.read())
                return body
        except urllib.error.HTTPError as error:
            refused: dict[str, Any] = json.loads(error.read())
            return refused
        except OSError:
            self._restart_if_its_port_was_taken()
            return None

    def _restart_if_its_port_was_taken(self) -> None:
        """Start again on other ports when one was taken before the operator bound it
        (``free_port`` releases the port it found: another socket of the machine can get it
        first), which the operator says as it exits."""
        if self.process is None or self.process.poll() is None:
            return
        if PORT_TAKEN not in self.output():
            return
        self.port = free_port()
        self.webhook_port = free_port() if self.webhook_port else 0
        self.start()

    async def wait_ready(self, timeout: float = 90.0) -> None:
        await eventually(lambda: bool((self.probe("/readyz") or {}).get("ready")), timeout, self)

    async def wait_active(self, timeout: float = 60.0) -> None:
        await eventually(lambda: bool((self.probe("/healthz") or {}).get("active")), timeout, self)

    @property
    def active(self) -> bool:
        return bool((self.probe("/healthz") or {}).get("active"))

    def stop(self) -> None:
        """SIGTERM (the operator releases its Lease), then SIGKILL if it lingers."""
        stop_process(self.process)

    def kill(self) -> None:
        """SIGKILL: a crash; the Lease is not released."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]


#: The kinds the operator's readers watch, as they name themselves in logs and metrics.
READER_KINDS = ("elasticquotaprofiles", "elasticquotas", "nodes", "pods")


def reader_outage_lines(log: str, kind: str) -> tuple[int, int]:
    """How many WARNING (watch lost) and INFO (watching again) lines ``kind``'s reader wrote in
    an operator's ``log``."""
    lost = re.findall(rf" WARNING elasticquota\.kube\.reflector: {kind}: watch lost ", log)
    back = re.findall(rf" INFO elasticquota\.kube\.reflector: {kind}: watching again ", log)
    return len(lost), len(back)


async def eventually(
    condition: Callable[[], bool] | Callable[[], Awaitable[bool]],
    timeout: float = 30.0,
    operator: OperatorProcess | None = None,
    what: str = "condition",
) -> None:
    """Poll until ``condition`` holds; fail with the operator's log tail otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = condition()
        if not isinstance(outcome, bool):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            log = operator.output() if operator else ""
            raise AssertionError(
                f"{what} not reached within {timeout}s\n--- operator log ---\n{log}"
            )
        await asyncio.sleep(0.2)


# -- cluster reads --------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def active_operator(
    identity: str, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[OperatorProcess]:
    """An operator process started, ready and holding the Lease; stopped (SIGTERM) on exit."""
    process = OperatorProcess(identity, *extra, env=env).start()
    try:
        await process.wait_ready()
        await process.wait_active()
        yield process
    finally:
        process.stop()


async def until_converged(
    api: client.ApiClient, timeout: float, operator: OperatorProcess, what: str
) -> None:
    """Wait until the cluster's figures are what ``plan`` computes (``converged``)."""
    await eventually(lambda: converged(api), timeout, operator, what)


async def cluster_plan(api: client.ApiClient) -> Plan:
    return compute_plan(await cluster_manifests(api))


async def mismatches(api: client.ApiClient) -> list[str]:
    """Quotas whose written annotations or status.used differ from what plan computes."""
    plan = await cluster_plan(api)
    found = []
    for quota in await list_quotas(api):
        metadata = quota["metadata"]
        result = plan.snapshot.quotas.get(metadata["name"])
        if result is None or result.namespace != metadata["namespace"]:
            continue
        change = quota_write(result, metadata.get("annotations") or {}, quota.get("status"))
        if not change.empty:
            found.append(f"{metadata['namespace']}/{metadata['name']}: {change}")
    return found


async def converged(api: client.ApiClient) -> bool:
    return not await mismatches(api)


async def resource_versions(api: client.ApiClient) -> dict[str, str]:
    return {
        f"{q['metadata']['namespace']}/{q['metadata']['name']}": q["metadata"]["resourceVersion"]
        for q in await list_quotas(api)
    }


# -- cluster writes -------------------------------------------------------------------------------


async def apply_examples(api: client.ApiClient) -> None:
    loaded = load_paths([EXAMPLES])
    everything = [
        *loaded.namespaces, *loaded.priority_classes, *loaded.nodes, *loaded.profiles,
        *loaded.quotas, *loaded.pods,
    ]  # fmt: skip
    for manifest in apply_order(everything):
        await apply_manifest(api, manifest)


def pods_of(namespace: str) -> Kind:
    """What a ``Reflector`` of the pods of ``namespace`` lists and watches."""
    return Kind("pods", f"/api/v1/namespaces/{namespace}/pods")


def pod_manifest(
    namespace: str,
    name: str,
    cpu: str,
    memory: str = "1Gi",
    *,
    labels: dict[str, str] | None = None,
    priority_class: str | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "app:1",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def quota_manifest(
    namespace: str,
    name: str,
    minimum: dict[str, str],
    maximum: dict[str, str],
    *,
    parent: str | None = None,
    is_parent: bool = False,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A quota to apply (no uid: the API server gives it one); an empty ``parent`` is none."""
    return quota_body(
        name,
        namespace,
        min=minimum,
        max=maximum,
        parent=parent or None,
        is_parent=is_parent,
        annotations=annotations,
        uid=None,
    )


def node_manifest(
    name: str, cpu: str, memory: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


async def ensure_namespace(api: client.ApiClient, name: str) -> None:
    await apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def get_quota(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    quota: dict[str, Any] = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        QUOTA_GROUP, QUOTA_VERSION, namespace, QUOTA_PLURAL, name
    )
    return quota


async def create_pdb(
    api: client.ApiClient, namespace: str, app: str, name: str = "protect", minimum: int = 1
) -> None:
    """A PodDisruptionBudget keeping ``minimum`` pods labelled ``app`` available (policy/v1beta1
    on 1.20)."""
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": minimum, "selector": {"matchLabels": {"app": app}}},
    }
    response = await api.call_api(
        f"/apis/policy/v1beta1/namespaces/{namespace}/poddisruptionbudgets",
        "POST",
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    await raise_for_status(response)
