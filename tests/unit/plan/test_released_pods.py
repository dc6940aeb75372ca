"""A pod the admission gate has released but the scheduler has not bound yet.

The gate removed its scheduling gate and wrote the condition ``ElasticQuotaAdmission=True``
(reason ``Admitted``): nothing in the operator holds it any more, it waits for a node (or only for
its turn at the scheduler). ``explain`` and ``plan`` must say so, not run the admission check on it
as on a pod of a cluster without gating ("waits: quota ... used ... > runtime"), which such a pod
(pending, no gate, no condition) still gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from test_plan_gated import TOO_MUCH, cluster

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

RELEASED_REASON = "released by the admission gate; waiting for the scheduler to bind it"


def released(pod: dict[str, Any], status: str = "True") -> dict[str, Any]:
    """The pod after the gate's release: no gate, the condition the gate writes."""
    reason = "Admitted" if status == "True" else "QuotaExceeded"
    condition = {"type": "ElasticQuotaAdmission", "status": status, "reason": reason}
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}, condition]
    return pod


def busy(k8s: type[K8s], *pods: dict[str, Any]) -> list[dict[str, Any]]:
    """Quota team (max 4 cpu) using 3 cpu, and ``pods`` (2 cpu each)."""
    return cluster(k8s, *pods, busy="3")


def test_explain_says_a_released_pod_waits_for_the_scheduler(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = write(*busy(k8s, released(k8s.pod("r", "team", {"cpu": "2"}))))
    result = run_cli("explain", "team/r", "-f", path, "-o", "json")
    assert result.code == 0, result.err
    found = result.json()
    assert found["state"] == "pending"
    assert found["verdict"].startswith(f"{RELEASED_REASON} (no node fits it yet")
    assert (found["path"][0]["used"], found["path"][0]["request"]) == ({"cpu": "3"}, {"cpu": "5"})
    assert found["advice"] == []


def test_plan_admits_a_released_pod_and_says_why(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = write(*busy(k8s, released(k8s.pod("r", "team", {"cpu": "2"}))))
    result = run_cli("plan", "-f", path, "-o", "json")
    assert result.json()["admission"] == [
        {"pod": "team/r", "quota": "team", "admitted": True, "reason": RELEASED_REASON}
    ]
    table = run_cli("plan", "-f", path).out
    assert f"  admit team/r (team): {RELEASED_REASON}\n" in table


def test_a_pending_pod_without_the_condition_keeps_the_admission_check(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    held = released(k8s.pod("held", "team", {"cpu": "2"}), status="False")
    path = write(*busy(k8s, k8s.pod("plain", "team", {"cpu": "2"}), held))
    for name in ("plain", "held"):
        result = run_cli("explain", f"team/{name}", "-f", path, "-o", "json")
        assert result.json()["verdict"] == f"waits: {TOO_MUCH}"
