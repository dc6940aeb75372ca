"""``plan --fail-on-problems`` as a pre-merge gate: exit 0 clean, 1 on an error or a warning
(never on a note), 2 when the input cannot be read; the JSON problem list parses and names the
object, the file, the rule and the severity. Through the CLI in-process and through the real entry
point (``python -m elasticquota``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elasticquota.cli.plan_command import EXIT_OK, EXIT_PROBLEMS, EXIT_UNREADABLE

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

REPO = Path(__file__).resolve().parents[3]
CPU = {"cpu": "10"}
MIN_SUM = "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: p"


def over_parent_min(k8s: type[K8s]) -> list[dict[str, Any]]:
    """The issue's case: a child whose min exceeds its parent's min (the webhook refuses it)."""
    return [
        k8s.quota("p", {"cpu": "2"}, CPU, is_parent=True),
        k8s.quota("c", {"cpu": "4"}, CPU, parent="p"),
    ]


def test_exit_codes_are_documented_values() -> None:
    assert (EXIT_OK, EXIT_PROBLEMS, EXIT_UNREADABLE) == (0, 1, 2)


def test_a_clean_set_passes(run_cli: CliRunner, examples: Path) -> None:
    result = run_cli("plan", "-f", examples, "--fail-on-problems")
    assert (result.code, result.err) == (0, "")


def test_a_webhook_refusal_fails_the_gate_and_is_printed(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = write(*over_parent_min(k8s))
    result = run_cli("plan", "-f", path, "--fail-on-problems")
    assert result.code == EXIT_PROBLEMS
    assert f"ElasticQuota c/c: {MIN_SUM}" in result.out
    assert result.err == (
        "error: 2 problems (2 errors, 0 warnings); failing as --fail-on-problems asks\n"
    )


def test_without_the_flag_problems_do_not_change_the_exit_code(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    assert run_cli("plan", "-f", write(*over_parent_min(k8s))).code == EXIT_OK


def test_a_warning_fails_the_gate(run_cli: CliRunner, k8s: type[K8s], write: Writer) -> None:
    path = write(k8s.quota("a", max={"cpus": "1"}))
    result = run_cli("plan", "-f", path, "--fail-on-problems", "-o", "json")
    assert result.code == EXIT_PROBLEMS
    assert [p["severity"] for p in result.json()["problems"]] == ["warning"]


def test_a_note_never_fails_the_gate(run_cli: CliRunner, k8s: type[K8s], write: Writer) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    path = write(deployment, k8s.quota("a", max=CPU))
    result = run_cli("plan", "-f", path, "--fail-on-problems", "-o", "json")
    assert result.code == EXIT_OK
    assert [p["severity"] for p in result.json()["problems"]] == ["note"]


def test_unreadable_input_is_2_with_or_without_the_flag(run_cli: CliRunner, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [b\n", encoding="utf-8")
    for extra in ((), ("--fail-on-problems",)):
        result = run_cli("plan", "-f", broken, *extra)
        assert result.code == EXIT_UNREADABLE
        assert result.err.startswith(f"error: {broken}: not valid YAML")


def test_through_the_entry_point_the_json_parses_and_the_code_is_1(
    k8s: type[K8s], write: Writer
) -> None:
    path = write(*over_parent_min(k8s))
    done = subprocess.run(
        [sys.executable, "-m", "elasticquota", "plan", "-f", str(path), "-o", "json",
         "--fail-on-problems"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    problems = json.loads(done.stdout)["problems"]
    refused = [p for p in problems if p["source"] == "webhook" and p["name"] == "c"]
    assert [(p["kind"], p["namespace"], p["rule"], p["severity"]) for p in refused] == [
        ("ElasticQuota", "c", "min-sum", "error")
    ]
    assert (refused[0]["file"], refused[0]["document"]) == (str(path), 1)
    assert refused[0]["message"].startswith(MIN_SUM)


def test_a_quota_with_a_wrong_group_or_kind_is_a_warning_not_a_note(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    wrong_group = k8s.quota("a", max=CPU, api_version="scheduling.koordinator.sh/v1alpha1")
    wrong_kind = k8s.quota("b", max=CPU) | {"kind": "ElasticQuotas"}
    path = write(wrong_group, wrong_kind)
    result = run_cli("plan", "-f", path, "--fail-on-problems", "-o", "json")
    assert result.code == EXIT_PROBLEMS
    problems = result.json()["problems"]
    assert [(p["name"], p["rule"], p["severity"], p["message"]) for p in problems] == [
        ("a", "unknown-kind", "warning", "skipped: scheduling.koordinator.sh/v1alpha1 ElasticQuota "
         "is not a kind plan reads; did you mean kind ElasticQuota, apiVersion "
         "scheduling.sigs.k8s.io/v1alpha1?"),
        ("b", "unknown-kind", "warning", "skipped: scheduling.sigs.k8s.io/v1alpha1 ElasticQuotas "
         "is not a kind plan reads; did you mean kind ElasticQuota, apiVersion "
         "scheduling.sigs.k8s.io/v1alpha1?"),
    ]  # fmt: skip
    assert "a" not in result.json()["quotas"]
