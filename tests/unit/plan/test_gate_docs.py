"""The gate as docs/plan.md shows it: the GitHub Actions job's script and the pre-commit hook
(``.pre-commit-hooks.yaml`` with the configuration the page gives), run as written on a broken
and on a clean set of manifests."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from conftest import K8s, Writer

REPO = Path(__file__).resolve().parents[3]
PAGE = (REPO / "docs" / "plan.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
CPU = {"cpu": "10"}


def yaml_blocks() -> list[Any]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", PAGE, re.S)]


def workflow() -> dict[str, Any]:
    (found,) = [block for block in yaml_blocks() if isinstance(block, dict) and "jobs" in block]
    return found


def pre_commit_config() -> dict[str, Any]:
    (found,) = [block for block in yaml_blocks() if isinstance(block, dict) and "repos" in block]
    return found


def broken_set(k8s: type[K8s], write: Writer) -> Path:
    path = write(
        k8s.quota("p", {"cpu": "2"}, CPU, is_parent=True),
        k8s.quota("c", {"cpu": "4"}, {"cpus": "10"}, parent="p"),
        name="quotas/team.yaml",
    )
    return path.parent


def run_step(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": f"{REPO / 'operator'}"}
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_actions_job_annotates_each_problem_and_fails(
    k8s: type[K8s], write: Writer, tmp_path: Path
) -> None:
    written = broken_set(k8s, write) / "team.yaml"
    child_line = written.read_text(encoding="utf-8").splitlines().index("---") + 2  # 2nd document
    (step,) = [
        s for s in workflow()["jobs"]["plan"]["steps"] if s.get("name") == "elastic-quota plan"
    ]
    done = run_step(step["run"], tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    where = f"file=quotas/team.yaml,line={child_line}"
    assert (
        f"::error {where},title=min-sum::ElasticQuota c/c: checkMinQuotaSum all "
        "brothers' MinQuota > parent MinQuota, parent: p"
    ) in [line.split(" (sum")[0] for line in lines]
    assert any(
        line.startswith(f"::warning {where},title=resource-name::ElasticQuota c/c: ")
        for line in lines
    )
    assert "Traceback" not in done.stderr


def test_the_actions_job_passes_a_clean_set(tmp_path: Path) -> None:
    (tmp_path / "quotas").symlink_to(REPO / "examples")
    (step,) = [
        s for s in workflow()["jobs"]["plan"]["steps"] if s.get("name") == "elastic-quota plan"
    ]
    done = run_step(step["run"], tmp_path)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_the_pre_commit_hook_runs_plan_as_a_gate(
    k8s: type[K8s], write: Writer, tmp_path: Path
) -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    ((configured,),) = [repo["hooks"] for repo in pre_commit_config()["repos"]]
    assert configured["id"] == hook["id"]
    assert hook["pass_filenames"] is False  # the directories are judged as a whole
    assert re.search(hook["files"], "quotas/team.yaml")
    command = [*shlex.split(hook["entry"]), *configured["args"]]
    broken_set(k8s, write)
    done = run_step(shlex.join(command), tmp_path)
    assert done.returncode == 1
    assert "[min-sum]" in done.stdout
    (tmp_path / "quotas").rename(tmp_path / "broken")
    (tmp_path / "quotas").symlink_to(REPO / "examples")
    assert run_step(shlex.join(command), tmp_path).returncode == 0
