"""kube.lease.LeaderElector against KMock: a renewal whose write conflicts.

Rules (kube/lease.py): the holder's replace conflicts (409 on the ``resourceVersion`` it read)
when something else wrote the Lease between its read and its write, a label tool say. That is no
lost Lease: as in client-go, the holder reads it again and, still its holder, renews again
(``RENEWAL_TRIES`` writes in one attempt); conflicts that persist are failed renewals (``error``),
tried again every retry period, and the holder steps down only at the renew deadline, when its
fence closes, as after any failure. A conflict because another replica now holds the Lease is a
lost Lease at once. A renewal or a release keeps the labels, annotations, owner references and
finalizers others put on the Lease (a replace drops what it does not send).

Time runs on the fake clock of ``lease_election`` (the ``clock`` fixture of conftest); KMock's
``PUT`` checks ``resourceVersion`` (the ``leases`` fixture).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import kmock
import pytest
from lease_election import LEASES, ME, NAME, NS, OTHER, Clock, foreign, puts, run_for

from elasticquota.kube import lease as lease_module
from elasticquota.kube.lease import RENEWAL_TRIES, LeaderElector

if TYPE_CHECKING:
    from conftest import Leases


def labelled_meanwhile(server: kmock.KubernetesEmulator, leases: Leases) -> dict[str, Any]:
    """The Lease as read, while a label tool writes it right after (a new resourceVersion)."""
    seen = copy.deepcopy(leases.get(NS, NAME))
    written = copy.deepcopy(seen)
    written["metadata"]["labels"] = {"team": "platform"}
    written["metadata"]["resourceVersion"] = str(
        int(seen["metadata"].get("resourceVersion") or 0) + 1
    )
    server.objects[LEASES, NS, NAME] = written
    return seen


def flaps(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The elector's log lines about losing or taking the Lease."""
    return [
        record.getMessage()
        for record in caplog.records
        if "lost the leader lease" in record.getMessage()
        or "became the active replica" in record.getMessage()
    ]


async def test_a_renewal_that_conflicts_with_a_label_write_reads_again_and_renews(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    failures: list[str],
    leases: Leases,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger=lease_module.__name__)
    reads = 0

    def read(request: kmock.Request) -> dict[str, Any]:
        nonlocal reads
        reads += 1
        if reads == 1:  # the renewal at 5 s (the first read, at 0, is not this one)
            return labelled_meanwhile(kmock, leases)
        return copy.deepcopy(leases.get(NS, NAME))

    kmock["get", kmock.resource(LEASES)][1:] << read
    await run_for(elector, clock, 6)

    renewals = puts(kmock)
    assert len(renewals) == 2  # refused (the version read before the label), then renewed
    assert renewals[1]["metadata"]["resourceVersion"] == "1"  # the label tool's version
    assert elector.leading.is_set() and elector.fence.is_fresh()
    assert elector.fence.remaining() == pytest.approx(9.0)  # renewed at 5 s: open until 15 s
    assert failures == []
    assert len(flaps(caplog)) == 1  # became active once, never lost it
    assert leases.get(NS, NAME)["metadata"]["labels"] == {"team": "platform"}  # kept


async def test_conflicts_that_persist_step_down_at_the_renew_deadline_not_before(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    failures: list[str],
    leases: Leases,
    clock: Clock,
) -> None:
    """Created at 0; from 5 s on, every read is followed by another write of the Lease."""
    kmock["get", kmock.resource(LEASES)][1:] << (lambda request: labelled_meanwhile(kmock, leases))
    await run_for(elector, clock, 9.9)
    assert elector.leading.is_set() and elector.fence.is_fresh()
    assert failures and set(failures) == {"error"}  # failed renewals, none "lost"
    assert len(puts(kmock)) == RENEWAL_TRIES * len(failures)

    await run_for(elector, clock, 0.2)

    assert not elector.leading.is_set() and not elector.fence.is_fresh()
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ME  # nobody else took it


async def test_a_conflict_because_another_replica_took_the_lease_is_lost_at_once(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    failures: list[str],
    leases: Leases,
    clock: Clock,
) -> None:
    def read_then_other_takes_it(request: kmock.Request) -> dict[str, Any]:
        seen = copy.deepcopy(leases.get(NS, NAME))
        foreign(leases, version="50")  # a replica that saw it expired writes between GET and PUT
        return seen

    kmock["get", kmock.resource(LEASES)][1:2] << read_then_other_takes_it
    await run_for(elector, clock, 6)

    assert len(puts(kmock)) == 1  # refused; the next read shows the other holder
    assert not elector.leading.is_set() and not elector.fence.is_fresh()
    assert failures == ["lost"]
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER


async def test_renewals_and_the_release_keep_what_others_put_in_the_metadata(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    await run_for(elector, clock, 1)
    labelled = copy.deepcopy(leases.get(NS, NAME))
    labelled["metadata"]["labels"] = {"team": "platform"}
    labelled["metadata"]["annotations"] = {"owner": "sre"}
    labelled["metadata"]["finalizers"] = ["example.com/audit"]
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-1"}
    labelled["metadata"]["ownerReferences"] = [owner]
    kmock.objects[LEASES, NS, NAME] = labelled

    await run_for(elector, clock, 10)  # renewals
    await elector.release()

    *renewals, release = puts(kmock)
    assert len(renewals) >= 2 and release["spec"]["holderIdentity"] == ""
    for body in (*renewals, release):
        assert body["metadata"]["labels"] == {"team": "platform"}
        assert body["metadata"]["annotations"] == {"owner": "sre"}
        assert body["metadata"]["finalizers"] == ["example.com/audit"]
        assert body["metadata"]["ownerReferences"] == [owner]
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ""  # released
