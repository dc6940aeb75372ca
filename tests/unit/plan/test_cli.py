"""``elastic-quota plan`` on the command line: options, outputs, notes and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plan_document import PLAN_DOCUMENT_KEYS

from elasticquota import __version__

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer

REPO = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


def test_plan_prints_the_table_by_default(run_cli: CliRunner, examples: Path) -> None:
    result = run_cli("plan", "-f", examples)
    assert result.code == 0
    assert result.out.splitlines()[0].split()[:2] == ["QUOTA", "RESOURCE"]
    assert "  ml-research: ml-research/train-4, ml-research/train-5" in result.out
    assert result.err == ""


def test_plan_o_json_prints_one_json_document(run_cli: CliRunner, examples: Path) -> None:
    result = run_cli("plan", "-f", examples, "-o", "json")
    assert result.code == 0
    assert result.out.endswith("}\n")
    assert set(result.json()) == set(PLAN_DOCUMENT_KEYS)


def test_table_and_json_can_be_asked_for_by_name(run_cli: CliRunner, examples: Path) -> None:
    table = run_cli("plan", "--filename", examples, "--output", "table")
    assert table.code == 0
    assert table.out == run_cli("plan", "-f", examples).out


def test_several_paths_are_read_together(
    run_cli: CliRunner, examples: Path, k8s: type[K8s], write: Writer
) -> None:
    extra = write(k8s.node("extra", {"cpu": "16", "memory": "64Gi"}))
    document = run_cli(
        "plan", "-f", examples / "nodes.yaml", "-f", extra, "-f", examples / "profile.yaml",
        "-o", "json",
    ).json()  # fmt: skip
    assert document["trees"][""]["total"]["cpu"] == "80"  # 4 x 16 + 16 (the GPU pool cut out)


def test_other_kinds_are_noted_on_stderr_and_the_output_stays_clean(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    path = write(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
        k8s.node("n1", {"cpu": "1"}),
    )
    result = run_cli("plan", "-f", path, "-o", "json")
    assert result.code == 0
    assert result.err == f"note: skipped apps/v1 Deployment web ({path}): not a kind plan reads\n"
    (note,) = result.json()["problems"]  # and in the JSON, as a note (never failing)
    assert note["severity"] == "note"
    assert note["rule"] == "skipped-kind"
    assert (note["kind"], note["name"], note["file"], note["document"]) == (
        "Deployment",
        "web",
        str(path),
        0,
    )


def test_a_note_on_an_object_without_api_version_reads_evenly(
    run_cli: CliRunner, write: Writer
) -> None:
    path = write({"kind": "Foo", "metadata": {"name": "bar"}})
    result = run_cli("plan", "-f", path, "-o", "json")
    assert result.err == f"note: skipped Foo bar ({path}): not a kind plan reads\n"
    (note,) = result.json()["problems"]
    assert note["message"] == "skipped: Foo is not a kind plan reads"


def test_a_missing_path_exits_2_with_an_error(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("plan", "-f", tmp_path / "nope.yaml")
    assert result.code == 2
    assert result.out == ""
    assert result.err == f"error: {tmp_path / 'nope.yaml'}: no such file or directory\n"


def test_an_empty_directory_fails_the_gate_with_exit_2(run_cli: CliRunner, tmp_path: Path) -> None:
    """A CI gate pointed at a mistyped or empty directory must fail, not pass a plan of nothing."""
    result = run_cli("plan", "-f", tmp_path, "--fail-on-problems")
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        f"error: {tmp_path}: a directory with no manifest file (.yaml, .yml, .json)\n"
    )


def test_broken_yaml_exits_2_naming_the_file(
    run_cli: CliRunner, tmp_path: Path, examples: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [Node\n")
    result = run_cli("plan", "-f", examples, "-f", broken)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(f"error: {broken}: not valid YAML")


def test_plan_requires_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    from elasticquota.cli import main

    with pytest.raises(SystemExit) as raised:
        main(["plan"])
    assert raised.value.code == 2
    assert "-f/--filename" in capsys.readouterr().err


def test_an_unknown_output_format_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from elasticquota.cli import main

    with pytest.raises(SystemExit) as raised:
        main(["plan", "-f", ".", "-o", "xml"])
    assert raised.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from elasticquota.cli import main

    with pytest.raises(SystemExit) as raised:
        main(["--version"])
    assert raised.value.code == 0
    assert capsys.readouterr().out == f"elastic-quota {__version__}\n"


# -- options that change the computation -------------------------------------------------------


@pytest.fixture
def over_committed_mins(k8s: type[K8s], write: Writer) -> Path:
    """Two top-level quotas with min 8 each on a 10-cpu cluster, each asking for 8."""
    return write(
        k8s.node("n1", {"cpu": "10"}),
        k8s.quota("a", {"cpu": "8"}, {"cpu": "10"}),
        k8s.quota("b", {"cpu": "8"}, {"cpu": "10"}),
        k8s.pod("pa", "a", {"cpu": "8"}),
        k8s.pod("pb", "b", {"cpu": "8"}),
    )


def figures(document: Any, field: str) -> dict[str, Any]:
    return {name: document["quotas"][name][field] for name in ("a", "b")}


def test_mins_above_the_cluster_are_scaled_down_by_default(
    run_cli: CliRunner, over_committed_mins: Path
) -> None:
    # S = 16 > T = 10: each min becomes 10 * 8 / 16 = 5, and so does each runtime.
    document = run_cli("plan", "-f", over_committed_mins, "-o", "json").json()
    assert figures(document, "effectiveMin") == {"a": {"cpu": "5"}, "b": {"cpu": "5"}}
    assert figures(document, "runtime") == {"a": {"cpu": "5"}, "b": {"cpu": "5"}}
    assert [entry["admitted"] for entry in document["admission"]] == [False, False]


def test_no_min_quota_scale_keeps_the_spec_mins(
    run_cli: CliRunner, over_committed_mins: Path
) -> None:
    # Without the scale-down each quota keeps its min 8, even though 8 + 8 > 10.
    document = run_cli(
        "plan", "-f", over_committed_mins, "-o", "json", "--no-min-quota-scale"
    ).json()
    assert figures(document, "effectiveMin") == {"a": {"cpu": "8"}, "b": {"cpu": "8"}}
    assert figures(document, "runtime") == {"a": {"cpu": "8"}, "b": {"cpu": "8"}}
    assert [entry["admitted"] for entry in document["admission"]] == [True, True]


def test_check_parent_quota_also_checks_the_ancestors(
    run_cli: CliRunner, k8s: type[K8s], write: Writer
) -> None:
    # parent runtime 10; c1 uses 8 (runtime 5), c2's pending 5 fits c2 (runtime 5) but not the
    # parent: 8 + 5 > 10.
    path = write(
        k8s.node("n1", {"cpu": "10"}),
        k8s.quota("parent", {"cpu": "10"}, {"cpu": "10"}, is_parent=True),
        k8s.quota("c1", {"cpu": "5"}, {"cpu": "10"}, parent="parent"),
        k8s.quota("c2", {"cpu": "5"}, {"cpu": "10"}, parent="parent"),
        k8s.pod("busy", "c1", {"cpu": "8"}, node="n1"),
        k8s.pod("new", "c2", {"cpu": "5"}),
    )
    plain = run_cli("plan", "-f", path, "-o", "json").json()["admission"]
    checked = run_cli("plan", "-f", path, "-o", "json", "--check-parent-quota").json()["admission"]
    assert plain == [
        {"pod": "c2/new", "quota": "c2", "admitted": True, "reason": "fits in quota c2"}
    ]
    assert checked == [
        {
            "pod": "c2/new",
            "quota": "c2",
            "admitted": False,
            "reason": "quota parent: cpu used 8 + request 5 > runtime 10",
        }
    ]


def test_the_resources_option_filters_the_table(run_cli: CliRunner, examples: Path) -> None:
    text = run_cli("plan", "-f", examples, "--resources", "memory, pods").out
    table = text.split("\n\n")[0].splitlines()[1:]
    shown = {line[31:49].strip() for line in table if not line.startswith(("default", "tree "))}
    assert shown == {"memory", "pods"}


def test_the_resources_option_does_not_change_json(run_cli: CliRunner, examples: Path) -> None:
    plain = run_cli("plan", "-f", examples, "-o", "json").out
    assert run_cli("plan", "-f", examples, "-o", "json", "--resources", "cpu").out == plain


# -- the installed entry points ----------------------------------------------------------------


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, cwd=REPO, timeout=300
    )


def test_the_elastic_quota_script_runs_plan(examples: Path, run_cli: CliRunner) -> None:
    done = run(VENV_BIN / "elastic-quota", "plan", "-f", "examples/", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == run_cli("plan", "-f", examples, "-o", "json").json()


def test_python_m_elasticquota_is_the_same_command(tmp_path: Path) -> None:
    done = run(sys.executable, "-m", "elasticquota", "plan", "-f", "examples/")
    assert done.returncode == 0, done.stderr
    assert "ml-research: ml-research/train-4, ml-research/train-5" in done.stdout
    missing = run(sys.executable, "-m", "elasticquota", "plan", "-f", tmp_path / "none")
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ")
