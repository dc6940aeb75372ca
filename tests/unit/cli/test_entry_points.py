"""The program's names: ``elastic-quota``, ``python -m elasticquota`` and the kubectl plugin
``kubectl-elastic_quota``, which kubectl runs as ``kubectl elastic-quota``; ``--version``; plain
text help for every command; a reader that goes away early (``tree | head``) ends it quietly.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from cli_run import (
    QUOTAS_PATH,
    REPO,
    VENV_BIN,
    ApiServerStub,
    environment,
    kubeconfig,
    quota_list,
    run,
)

from elasticquota import __version__
from elasticquota.cli import errors, parser
from elasticquota.cli.tree_command import CLEAR_SCREEN

pytestmark = pytest.mark.timeout(300)

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
COMMANDS = ("plan", "run", "tree", "explain", "usage", "completion")
#: reStructuredText (or Sphinx) markup that would show as such in a terminal.
MARKUP = ("``", ":ref:", ":class:", ":func:", ":mod:", ":attr:", ".. ")


def console_script(directory: Path, name: str) -> Path:
    """The launcher pip writes for the ``[project.scripts]`` entry ``name`` (module:function)."""
    module, function = SCRIPTS[name].split(":")
    path = directory / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"from {module} import {function}\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n"
        f"    sys.exit({function}())\n",
        encoding="utf-8",
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_both_scripts_are_the_same_program() -> None:
    assert SCRIPTS["elastic-quota"] == "elasticquota.cli:main"
    assert SCRIPTS["kubectl-elastic_quota"] == SCRIPTS["elastic-quota"]


def test_version_of_python_m_and_of_the_installed_script() -> None:
    for program in ([sys.executable, "-m", "elasticquota"], [str(VENV_BIN / "elastic-quota")]):
        result = run("--version", program=program)
        assert (result.code, result.out, result.err) == (0, f"elastic-quota {__version__}\n", "")


def test_the_plugin_script_names_itself_kubectl_elastic_quota(tmp_path: Path) -> None:
    plugin = [str(console_script(tmp_path, "kubectl-elastic_quota"))]
    version = run("--version", program=plugin)
    assert (version.code, version.out) == (0, f"kubectl elastic-quota {__version__}\n")
    usage = run("tree", "--help", program=plugin)
    assert usage.out.startswith("usage: kubectl elastic-quota tree ")
    wrong = run("tree", "-o", "xml", program=plugin)
    assert wrong.code == errors.EXIT_USAGE
    assert "kubectl elastic-quota tree: error: argument -o/--output" in wrong.err


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_runs_the_plugin_from_the_path(tmp_path: Path) -> None:
    console_script(tmp_path, "kubectl-elastic_quota")
    env = environment(home=tmp_path, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    result = run("elastic-quota", "--version", program=["kubectl"], env=env)
    assert (result.code, result.out) == (0, f"kubectl elastic-quota {__version__}\n")
    listed = subprocess.run(
        ["kubectl", "plugin", "list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert str(tmp_path / "kubectl-elastic_quota") in listed.stdout


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_plain_text(command: str | None) -> None:
    result = run(*([command] if command else []), "--help")
    assert result.code == 0, result.err
    assert result.out.startswith(f"usage: elastic-quota {command or ''}".rstrip())
    assert [mark for mark in MARKUP if mark in result.out] == []


def test_every_help_string_the_parser_holds_is_plain_text() -> None:
    """Descriptions, helps and metavars of every command and option (what --help shows, and what
    the completion scripts describe)."""
    top = parser()
    found = []
    for action in top._actions:
        for sub in getattr(action, "choices", None) or {}:
            command = action.choices[sub]  # type: ignore[index]
            texts = [command.description or ""]
            texts += [str(item.help or "") for item in command._actions]
            found += [(sub, text) for text in texts if any(mark in text for mark in MARKUP)]
    assert found == []


def piped(pipeline: str) -> subprocess.CompletedProcess[str]:
    """``elastic-quota PIPELINE`` in bash (``PIPELINE``: the command's arguments, a pipe and its
    reader); stdout ends with ``status N``, the command's own exit status."""
    script = f'{sys.executable} -m elasticquota {pipeline}; echo "status ${{PIPESTATUS[0]}}"'
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=REPO, env=environment(),
        timeout=120,
    )  # fmt: skip


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """``elastic-quota completion bash | true``: the reader exits before the command writes
    (a real pipe; the command takes a second or two to start)."""
    shell = piped("completion bash | true")
    assert shell.stderr == ""
    assert shell.stdout == f"status {errors.EXIT_BROKEN_PIPE}\n"


def test_tree_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    """``elastic-quota tree -A | head -1`` on a cluster with more quotas than a pipe holds."""
    quotas = [
        {"metadata": {"name": f"team-{index:04d}", "namespace": "teams"},
         "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}}}
        for index in range(3000)
    ]  # fmt: skip
    with ApiServerStub(200, {}, paths={QUOTAS_PATH: (200, quota_list(*quotas))}) as url:
        config = kubeconfig(tmp_path / "config", {"c": url})
        shell = piped(f"tree -A --kubeconfig {config} | head -1")
    assert shell.stderr == ""
    header, exit_status = shell.stdout.splitlines()
    assert header.split()[:3] == ["QUOTA", "RESOURCE", "MIN"]
    # 141 when a write found the pipe closed; 0 when the last write still fitted in the pipe
    assert exit_status in ("status 0", f"status {errors.EXIT_BROKEN_PIPE}")


def test_ctrl_c_ends_tree_watch_with_130_and_no_traceback(tmp_path: Path) -> None:
    with ApiServerStub(200, {}, paths={QUOTAS_PATH: (200, quota_list())}) as url:
        config = kubeconfig(tmp_path / "config", {"c": url})
        process = subprocess.Popen(
            [sys.executable, "-m", "elasticquota", "tree", "-A", "-w", "--interval", "0.2",
             "--kubeconfig", str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=environment(),
        )  # fmt: skip
        assert process.stdout is not None
        first = process.stdout.read(len(CLEAR_SCREEN))  # it is drawing
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert first == CLEAR_SCREEN.encode()
    assert (process.returncode, err) == (errors.EXIT_INTERRUPTED, b"")


def test_the_package_metadata_installs_both_scripts(tmp_path: Path) -> None:
    """setuptools' egg_info (what pip reads to write the launchers) lists both console scripts."""
    script = (
        "import setuptools; setuptools.setup(script_args=['-q', 'egg_info', '--egg-base', "
        f"{str(tmp_path)!r}])"
    )
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script],
        cwd=REPO, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (entry_points,) = tmp_path.glob("*.egg-info/entry_points.txt")
    lines = entry_points.read_text().split("[console_scripts]\n")[1].splitlines()
    assert "elastic-quota = elasticquota.cli:main" in lines
    assert "kubectl-elastic_quota = elasticquota.cli:main" in lines
