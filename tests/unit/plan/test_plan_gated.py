"""``plan`` judges a pod at the admission gate as the gate does (``core.decisions.gating``).

The gate counts pods released but not bound yet, and those it releases before a pod in the same
round (higher priority first, then older), as if they used their request; plan's admission section
(the table's "Pending pods" and ``-o json``'s ``admission``) must give the gate's decision, not the
plain admission check of each pod on its own. A pending pod without the gate keeps that check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from elasticquota.core.keys import ADMISSION_GATE

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

TOO_MUCH = "quota team: cpu used 3 + request 2 > runtime 4"


def gated(pod: dict[str, Any], created: str = "2024-01-01T00:00:00Z") -> dict[str, Any]:
    """The pod as the mutating webhook leaves it: our scheduling gate, its creation time."""
    pod["spec"]["schedulingGates"] = [{"name": ADMISSION_GATE}]
    pod["metadata"]["creationTimestamp"] = created
    return pod


def cluster(k8s: type[K8s], *pods: dict[str, Any], busy: str = "1") -> list[dict[str, Any]]:
    """Quota team (max 4 cpu) with a running pod of ``busy`` cpu, on a node of 16, and ``pods``."""
    return [
        k8s.node("n1", {"cpu": "16"}),
        k8s.quota("team", None, {"cpu": "4"}),
        k8s.pod("busy", "team", {"cpu": busy}, node="n1"),
        *pods,
    ]


def admission(run_cli: CliRunner, write: Writer, documents: list[dict[str, Any]]) -> Any:
    result = run_cli("plan", "-f", write(*documents), "-o", "json")
    assert result.code == 0, result.err
    return {entry["pod"]: entry for entry in result.json()["admission"]}


def test_the_round_releases_the_higher_priority_pod_and_holds_the_next(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    first = gated(k8s.pod("first", "team", {"cpu": "2"}, priority=10))
    second = gated(k8s.pod("second", "team", {"cpu": "2"}))
    entries = admission(run_cli, write, cluster(k8s, second, first))
    assert entries["team/first"] == {
        "pod": "team/first", "quota": "team", "admitted": True, "reason": "fits in quota team",
    }  # fmt: skip
    assert entries["team/second"] == {
        "pod": "team/second", "quota": "team", "admitted": False, "reason": TOO_MUCH,
    }  # fmt: skip


def test_the_older_of_two_equal_pods_goes_first(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    young = gated(k8s.pod("a-young", "team", {"cpu": "2"}), "2024-01-02T00:00:00Z")
    old = gated(k8s.pod("z-old", "team", {"cpu": "2"}), "2024-01-01T00:00:00Z")
    entries = admission(run_cli, write, cluster(k8s, young, old))
    assert (entries["team/z-old"]["admitted"], entries["team/a-young"]["admitted"]) == (True, False)


def test_a_gated_pod_behind_a_pod_released_not_bound_waits_in_table_and_json(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    documents = cluster(
        k8s, k8s.pod("bound-soon", "team", {"cpu": "2"}), gated(k8s.pod("p", "team", {"cpu": "2"}))
    )
    assert admission(run_cli, write, documents)["team/p"]["reason"] == TOO_MUCH
    table = run_cli("plan", "-f", write(*documents, name="table.yaml")).out
    assert f"  wait  team/p (team): {TOO_MUCH}\n" in table


def test_a_pending_pod_without_the_gate_keeps_the_admission_check(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    plain = [k8s.pod("one", "team", {"cpu": "2"}), k8s.pod("two", "team", {"cpu": "2"})]
    entries = admission(run_cli, write, cluster(k8s, *plain))
    assert [entries[f"team/{name}"]["admitted"] for name in ("one", "two")] == [True, True]
