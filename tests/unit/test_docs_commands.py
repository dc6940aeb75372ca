"""The docs' example commands run as shown, with the output shown (the ones that need no cluster).

Every command block of README.md and docs/*.md is a ``console`` block run by a test, or marked
``<!-- docs-test: skip REASON -->`` (docs/development.md, "Commands in the docs"): a new page or
example cannot slip past unchecked. Blocks marked ``<!-- docs-test: cluster -->`` run against the
local control plane (tests/integration/test_docs_commands_live.py); the others run here, with a
kubeconfig that does not exist, so that one needing a cluster and not marked fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_commands import (
    ROOT,
    Block,
    blocks,
    check,
    command_blocks,
    environment,
    matches,
    write_scripts,
)

RUN_HERE = [block for block in command_blocks() if block.language == "console" and not block.marker]


def test_every_command_block_is_run_or_says_why_not() -> None:
    unmarked = [
        block.where
        for block in command_blocks()
        if block.language != "console" and block.marker != "skip"
    ]
    assert not unmarked, (
        "command blocks neither run (```console with $ lines) nor marked "
        f"<!-- docs-test: skip REASON -->: {unmarked}"
    )
    reasonless = [
        block.where for block in command_blocks() if block.marker == "skip" and not block.reason
    ]
    assert not reasonless, f"a skip marker without its reason: {reasonless}"


def test_console_blocks_hold_commands() -> None:
    empty = [
        block.where
        for block in command_blocks()
        if block.language == "console" and not block.commands()
    ]
    assert not empty, f"console blocks without a $ line: {empty}"


def test_the_commands_the_issue_names_are_run() -> None:
    """plan (-o json, --users, --fail-on-problems), the help of the program, of run and of the
    demo, completion; kubectl's short names, tree, explain and usage against the cluster."""
    shown = {
        (command.line, block.marker)
        for block in command_blocks()
        if block.language == "console"
        for command in block.commands()
    }
    lines = "\n".join(f"{marker} {line}" for line, marker in shown)
    for expected in [
        r"^None elastic-quota plan -f examples/$",
        r"^None elastic-quota plan -f examples/ -o json",
        r"^None elastic-quota plan -f examples/ --users",
        r"^None elastic-quota plan .*--fail-on-problems",
        r"^None elastic-quota --help$",
        r"^None elastic-quota run --help$",
        r"^None .*python -m eqdev.demo --help$",
        r"^None .*elastic-quota completion bash",
        r"^cluster kubectl get eq -A",
        r"^cluster kubectl get eqp -A",
        r"^cluster elastic-quota tree -A",
        r"^cluster elastic-quota explain ",
        r"^cluster elastic-quota usage ",
    ]:
        assert re.search(expected, lines, re.MULTILINE), f"no docs example runs {expected}"


@pytest.mark.parametrize("block", RUN_HERE, ids=[block.where for block in RUN_HERE])
def test_the_command_prints_what_the_docs_show(block: Block, tmp_path: Path) -> None:
    scripts = tmp_path / "bin"
    scripts.mkdir()
    env = environment(write_scripts(scripts), KUBECONFIG=str(tmp_path / "no-kubeconfig"))
    failures = check(block, env)
    assert not failures, "\n\n".join(failures)


FLAG = re.compile(r"--[a-z][a-z-]+")


def run_help_flags() -> set[str]:
    block = next(
        b for b in RUN_HERE if any(c.line == "elastic-quota run --help" for c in b.commands())
    )
    command = next(c for c in block.commands() if c.line == "elastic-quota run --help")
    options = [line.split()[0] for line in command.expected if line.startswith("  --")]
    return {option for option in options if option not in ("--debug",)}


def test_the_readmes_flag_column_is_run_s_help() -> None:
    """The configuration reference's flag column names exactly the flags of ``run --help`` (whose
    output the operator page shows, checked above)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Configuration reference")
    table = text[start : text.index("\n## ", start + 1)]
    flags: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            flags.update(FLAG.findall(line.split("|")[2]))
    assert flags == run_help_flags()


# -- the convention itself ------------------------------------------------------------------------


def test_the_extraction_reads_markers_commands_and_exit_codes(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n<!-- docs-test: skip needs Docker -->\n```sh\nmake image\n```\n\n"
        "<!-- docs-test: cluster -->\n```console\n$ kubectl get eq \\\n  -A\nNAME\n"
        "$ false  # exit 1\n```\n\n```yaml\na: 1\n```\n\n```\n$ unmarked\n```\n"
    )
    found = blocks(page)
    assert [(b.language, b.marker, b.reason) for b in found] == [
        ("sh", "skip", "needs Docker"),
        ("console", "cluster", None),
        ("yaml", None, None),
        ("", None, None),
    ]
    assert [b.is_command_block for b in found] == [True, True, False, True]
    commands = found[1].commands()
    assert [(c.line, c.expected, c.exit_code) for c in commands] == [
        ("kubectl get eq \\\n-A", ("NAME",), 0),
        ("false  # exit 1", (), 1),
    ]


def test_the_comparison_allows_ellipses_and_placeholders_only() -> None:
    assert matches(("a", "...", "d"), "a\nb\nc\nd\n")
    assert matches(("a", "...", "b"), "a\nb\n")
    assert matches(("x   <age>",), "x   2m3s  \n\n")
    assert not matches(("a", "d"), "a\nb\nd\n")
    assert not matches(("a",), "a\nb\n")
    assert not matches(("x <n>",), "x y\n")
