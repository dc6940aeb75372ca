"""``-f -`` reads the manifests from standard input, as kubectl's: ``kustomize build | elastic-quota
plan -f -`` judges what would be applied, with no file written."""

from __future__ import annotations

import json

import pytest
from cli_run import EXAMPLES, run

from elasticquota.cli import errors

pytestmark = pytest.mark.timeout(300)


def examples_text() -> str:
    """The bundled example as one multi-document YAML stream, as a build tool prints it."""
    return "---\n".join(
        path.read_text(encoding="utf-8") for path in sorted(EXAMPLES.glob("*.yaml"))
    )


def test_plan_reads_standard_input_as_it_reads_the_files() -> None:
    piped = run("plan", "-f", "-", "-o", "json", stdin=examples_text())
    files = run("plan", "-f", EXAMPLES, "-o", "json")
    assert piped.code == 0, piped.err
    assert {**piped.json(), "problems": []} == {**files.json(), "problems": []}


def test_a_problem_read_from_standard_input_is_placed_there() -> None:
    quota = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q", "namespace": "team"},
        "spec": {"mni": {"cpu": "1"}},
    }
    result = run("plan", "-f", "-", "-o", "json", "--fail-on-problems", stdin=json.dumps(quota))
    assert result.code == errors.EXIT_PROBLEMS
    (problem,) = [p for p in result.json()["problems"] if p["rule"] == "unknown-field"]
    assert (problem["file"], problem["document"], problem["line"]) == ("<stdin>", 0, 1)


@pytest.mark.parametrize("command", [["explain", "analytics/report-3"], ["usage", "users", "-A"]])
def test_explain_and_usage_read_standard_input_too(command: list[str]) -> None:
    piped = run(*command, "-f", "-", "-o", "json", stdin=examples_text())
    files = run(*command, "-f", EXAMPLES, "-o", "json")
    assert piped.code == 0, piped.err
    assert piped.json() == files.json()


def test_unreadable_standard_input_is_exit_2() -> None:
    result = run("plan", "-f", "-", stdin="a: [unclosed\n")
    assert result.code == errors.EXIT_USAGE
    assert result.one_line_error().startswith("error: <stdin>: not valid YAML: ")
