"""``elastic-quota completion bash|zsh|fish``: scripts made from the parser, for both names.

The bash script is checked by bash itself: ``bash -n``, then sourced and asked what it completes
(commands, options of a command, the choices of ``-o``, the sections of ``usage``). zsh and fish
are not installed here: their scripts are checked for every command and option of the parser.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_run import run

from elasticquota.cli import parser
from elasticquota.cli.completion import NAMES, model

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    found = {}
    for shell in ("bash", "zsh", "fish"):
        result = run("completion", shell)
        assert (result.code, result.err) == (0, ""), result.err
        found[shell] = result.out
    return found


def test_the_bash_script_is_valid_bash(scripts: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "elastic-quota.bash"
    path.write_text(scripts["bash"], encoding="utf-8")
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert (checked.returncode, checked.stderr) == (0, "")


def complete(script: Path, *words: str) -> list[str]:
    """What the bash script offers for the command line ``words`` (the last is being typed)."""
    line = " ".join(f"'{word}'" for word in words)
    program = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
        '_elastic_quota; printf "%s\\n" "${COMPREPLY[@]}"; complete -p'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_bash_script_completes_commands_options_and_choices(
    scripts: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "elastic-quota.bash"
    script.write_text(scripts["bash"], encoding="utf-8")
    registered = [
        line for line in complete(script, "elastic-quota", "") if line.startswith("complete ")
    ]
    assert sorted(line.split()[-1] for line in registered) == sorted(NAMES)
    commands = complete(script, "elastic-quota", "")
    assert {"plan", "tree", "explain", "usage", "completion", "--version"} <= set(commands)
    assert "-o" in complete(script, "elastic-quota", "tree", "-")
    assert "--all-namespaces" in complete(script, "elastic-quota", "tree", "--")
    assert "--all-namespaces" not in complete(script, "elastic-quota", "explain", "--")
    formats = complete(script, "elastic-quota", "tree", "-o", "")
    assert formats[:4] == ["table", "wide", "json", "yaml"]
    assert complete(script, "elastic-quota", "usage", "g")[0] == "groups"
    assert complete(script, "kubectl-elastic_quota", "completion", "z")[0] == "zsh"


def test_zsh_and_fish_name_every_command_and_option(scripts: dict[str, str]) -> None:
    root, commands = model(parser())
    assert scripts["zsh"].startswith(f"#compdef {' '.join(NAMES)}\n")
    for command in commands:
        assert f"'{command.name}:" in scripts["zsh"]
        assert f"__fish_seen_subcommand_from {command.name}'" in scripts["fish"]
        for option in command.options:
            for flag in option.flags:
                assert f"'{flag}:" in scripts["zsh"], (command.name, flag)
            long = next((flag for flag in option.flags if flag.startswith("--")), None)
            if long:
                assert f"-l {long[2:]}" in scripts["fish"], (command.name, long)
    assert "-l output -x -a 'table wide json yaml'" in scripts["fish"]
    assert "complete -c kubectl-elastic_quota" in scripts["fish"]
    assert root.words == [command.name for command in commands]
