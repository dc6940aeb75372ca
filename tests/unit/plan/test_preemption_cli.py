"""In-quota preemption in the CLI: ``plan`` lists the next gate round's preemptions (one per quota),
and ``explain`` of a pod at the admission gate says what preemption does for it: the
lower-priority pods of its quota the next round evicts, or, with ``--preemption-min-runtime`` (or
the quota's ``preemption-min-runtime`` annotation), the young ones it waits for and from when."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from elasticquota.core.decisions.minruntime import moment_text
from elasticquota.core.keys import ADMISSION_GATE, ANNO_PREEMPTION_MIN_RUNTIME

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

#: When ``low`` started: a minute before the module was collected, to the second.
STARTED = math.ceil(time.time() - 60)


def manifests(
    k8s: type[K8s], write: Writer, annotations: dict[str, str] | None = None, waiting: int = 1
) -> Path:
    """Quota ``team`` (4 cpu, lending nothing) full with ``low`` (priority 0, started at
    ``STARTED``); ``new`` (priority 5, 2 cpu) at the gate, and ``waiting - 1`` more like it
    (``new-1``... of priority 4)."""
    gated = [k8s.pod("new", "team", {"cpu": "2"}, priority=5)]
    gated += [k8s.pod(f"new-{n}", "team", {"cpu": "2"}, priority=4) for n in range(1, waiting)]
    for pod in gated:
        pod["spec"]["schedulingGates"] = [{"name": ADMISSION_GATE}]
    started = moment_text(STARTED)
    low = k8s.pod("low", "team", {"cpu": "4"}, node="n1", priority=0, start_time=started)
    quota = k8s.quota("team", {"cpu": "4"}, {"cpu": "4"}, allow_lent=False, annotations=annotations)
    return write(quota, k8s.node("n1", {"cpu": "8"}), low, *gated)


def test_explain_names_the_pods_preemption_evicts_and_whose_minimum_it_waits_for(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = manifests(k8s, write)
    plain = run_cli("explain", "team/new", "-f", path)
    assert "preemption: the next gate round evicts 1 lower-priority pod(s) of quota team to " in (
        plain.out
    )
    waiting = run_cli("explain", "team/new", "-f", path, "--preemption-min-runtime", "3600")
    document = run_cli(
        "explain", "team/new", "-f", path, "--preemption-min-runtime", "3600", "-o", "json"
    ).json()
    assert document["preemption"] == (
        "waits for the minimum runtime (3600 s) of team/low, lower-priority pods of quota team: "
        f"they may be evicted to make room from {moment_text(STARTED + 3600)}"
    )
    assert f"preemption: {document['preemption']}\n" in waiting.out
    revocation_only = run_cli("explain", "team/new", "-f", path, "--revocation-min-runtime", "3600")
    assert revocation_only.out == plain.out


def test_explain_reads_the_quotas_preemption_annotation(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = manifests(k8s, write, {ANNO_PREEMPTION_MIN_RUNTIME: "1h"})
    found = run_cli("explain", "team/new", "-f", path, "-o", "json").json()["preemption"]
    assert found.startswith("waits for the minimum runtime (3600 s) of team/low")


def test_plan_lists_one_preemption_per_quota_and_spares_young_pods_when_asked(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = manifests(k8s, write, waiting=2)
    document = run_cli("plan", "-f", path, "-o", "json").json()
    assert document["preemptions"] == [
        {"quota": "team", "pod": "team/new", "victims": ["team/low"]}
    ]  # new-1 waits too, but a round makes one preemption per quota
    table = run_cli("plan", "-f", path).out
    assert (
        "in-quota preemptions (quota: waiting pod <- evicted pods):\n  team: team/new <- team/low\n"
        in table
    )
    spared = run_cli("plan", "-f", path, "--preemption-min-runtime", "3600", "-o", "json").json()
    assert spared["preemptions"] == []
    assert "preemptions" not in run_cli("plan", "-f", path, "--preemption-min-runtime", "3600").out
