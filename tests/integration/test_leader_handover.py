"""Leader hand-over on the real API server: never two writers, and no wait for a lease nobody holds.

* A slow link: the active replica reaches the API server through a TCP proxy that delays every byte
  by one second (``proxy.slow``); its renewals take longer than the renew deadline, a standby with
  a direct link takes over. Every write of the operator is logged when it passes the fence, with
  how long the fence stays open (``kube.client``, DEBUG): the old leader's writes, even sent at
  the last moment its fence allowed and delivered a full delay later, reach the API server before
  the new leader's first write is sent.
* A restarted container of the same pod (identity from ``POD_NAME``) takes its Lease back as soon
  as it has listed the cluster, not after the lease duration (30 s here).
* SIGTERM: the leader releases the Lease on its way out and the standby leads within a couple of
  retry periods (0.25 s here), not after the lease duration.

Each test elects on a Lease of its own (``--lease-name``), so that no other test's replica is in
the way.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import re
import time
import uuid
from pathlib import Path

import harness
import pytest
from kubernetes_asyncio import client
from proxy import Proxy, proxied_kubeconfig

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.kube.apply import apply_manifest

pytestmark = pytest.mark.timeout(120)

RETRY_PERIOD = 0.25
#: One-way delay of the slow link; below lease duration - renew deadline (the fence's margin).
DELAY = 1.0
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ ([\w.]+): (.*)$")


def replica(
    identity: str,
    lease: str,
    duration: float,
    renew_deadline: float,
    env: dict[str, str] | None = None,
    *,
    as_pod: bool = False,
    debug: bool = False,
) -> harness.OperatorProcess:
    return harness.OperatorProcess(
        identity,
        "--lease-name", lease,
        *(["--log-level", "DEBUG"] if debug else []),
        lease_duration=duration,
        env={
            "ELASTIC_QUOTA_LEASE_RENEW_DEADLINE": str(renew_deadline),
            "ELASTIC_QUOTA_LEASE_RETRY_PERIOD": str(RETRY_PERIOD),
            **(env or {}),
        },
        as_pod=as_pod,
    )  # fmt: skip


def log_lines(
    operator: harness.OperatorProcess, logger: str, pattern: str
) -> list[tuple[float, str]]:
    """(epoch seconds, message) of the operator's log lines of ``logger`` matching ``pattern``."""
    found = []
    for line in operator.log.read_text(errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if match and match[2] == logger and re.search(pattern, match[3]):
            moment = datetime.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f")
            found.append((moment.timestamp(), match[3]))
    return found


def writes(operator: harness.OperatorProcess) -> list[tuple[float, float]]:
    """(when the write passed the fence, when that fence closed at the latest)."""
    return [
        (moment, moment + float(re.search(r"closes in ([\d.]+) s", message)[1]))  # type: ignore[index]
        for moment, message in log_lines(operator, "elasticquota.kube.client", r"^write ")
    ]


async def churn(api: client.ApiClient, namespace: str, node: str) -> None:
    """A bound pod every 0.2 s: the quota's used changes all the time, so the leader writes."""
    for index in range(10_000):
        await apply_manifest(
            api, harness.pod_manifest(namespace, f"churn-{index}", "10m", node=node)
        )
        await asyncio.sleep(0.2)


@pytest.mark.timeout(150)
async def test_a_leader_on_a_slow_link_stops_writing_before_the_new_leader_writes(
    api: client.ApiClient, proxy: Proxy, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    namespace, node, lease = f"slow-{suffix}", f"slow-node-{suffix}", f"slow-lease-{suffix}"
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(node, "1000", "4Ti"))
    await apply_manifest(
        api, harness.quota_manifest(namespace, namespace, {"cpu": "1"}, {"cpu": "900"})
    )
    kubeconfig = proxied_kubeconfig(Path(os.environ["KUBECONFIG"]), proxy.port, tmp_path / "kc")
    # lease 4 s, renew deadline 2.5 s: the fence closes 1.5 s before a standby may take over
    old = replica(
        f"old-{suffix}", lease, 4, 2.5, {"KUBECONFIG": str(kubeconfig)}, debug=True
    ).start()
    new = replica(f"new-{suffix}", lease, 4, 2.5, debug=True)
    writer = None
    try:
        await old.wait_ready()
        await old.wait_active()
        new.start()
        await new.wait_ready()
        assert not new.active
        started = len(writes(old))  # its first pass over every quota
        writer = asyncio.create_task(churn(api, namespace, node))
        await harness.eventually(
            lambda: len(writes(old)) > started + 10, 30, old, "it writes the churn"
        )

        proxy.slow(DELAY)
        slowed = time.time()
        await new.wait_active(timeout=30)
        await asyncio.sleep(5)  # both would write now if the old one still did
    finally:
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        proxy.slow(0)
        old.stop()
        new.stop()

    took_over = log_lines(new, "elasticquota.kube.lease", "became the active replica")
    assert took_over, new.output()
    new_writes = [sent for sent, _ in writes(new)]
    assert new_writes, new.output()
    first_new_write = min(new_writes)
    old_writes = writes(old)
    assert sum(sent > slowed for sent, _ in old_writes) > 1  # it kept writing on the slow link
    # The latest moment an old leader's write could reach the API server: sent when its fence
    # closed at the latest, delivered DELAY later.
    latest_arrival = max(closes for _, closes in old_writes) + DELAY
    assert latest_arrival < first_new_write, (
        f"the old leader may have written {latest_arrival - first_new_write:.2f} s after the new "
        f"leader's first write\n--- old ---\n{old.output()}"
    )
    assert log_lines(old, "elasticquota.kube.lease", "lost the leader lease"), old.output()


async def test_a_restarted_replica_takes_its_own_lease_back_at_once(api: client.ApiClient) -> None:
    """Lease 30 s; the replica is killed (no release) and its pod's container restarts."""
    suffix = uuid.uuid4().hex[:6]
    pod, lease = f"operator-pod-{suffix}", f"restart-lease-{suffix}"
    first = replica(pod, lease, 30, 20, as_pod=True).start()
    try:
        await first.wait_active()
    finally:
        first.kill()

    second = replica(pod, lease, 30, 20, as_pod=True).start()
    try:
        await second.wait_ready()
        ready = time.monotonic()
        await second.wait_active(timeout=25)
        assert time.monotonic() - ready < 5  # not the 30 s a foreign holder would cost
        held = await client.CoordinationV1Api(api).read_namespaced_lease(
            lease, DEFAULT_RESERVED_NAMESPACE
        )
        assert held.spec.holder_identity == pod
        assert (held.spec.lease_transitions or 0) == 0  # it was its own: no transition
    finally:
        second.stop()


async def test_sigterm_hands_the_lease_to_the_standby_within_a_retry_period(
    api: client.ApiClient,
) -> None:
    """Lease 30 s: only the release on shutdown can explain a take-over within seconds."""
    suffix = uuid.uuid4().hex[:6]
    lease = f"sigterm-lease-{suffix}"
    leader = replica(f"leader-{suffix}", lease, 30, 20).start()
    standby = replica(f"standby-{suffix}", lease, 30, 20)
    try:
        await leader.wait_active()
        standby.start()
        await standby.wait_ready()
        assert not standby.active
        signalled = time.monotonic()
        leader.stop()  # SIGTERM, and wait for the process to end
        await standby.wait_active(timeout=25)
        assert time.monotonic() - signalled < 10
    finally:
        leader.stop()
        standby.stop()

    (released, _), *_ = log_lines(leader, "elasticquota.kube.lease", "released the leader lease")
    (leading, _), *_ = log_lines(standby, "elasticquota.kube.lease", "became the active replica")
    assert 0 <= leading - released < 2 * RETRY_PERIOD + 0.2  # log times have 1-ms resolution
