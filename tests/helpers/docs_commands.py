"""The example commands of README.md, docs/*.md and the other READMEs, extracted to be run.

The convention (docs/development.md, "Commands in the docs"):

* a fenced block with the info string ``console`` is run: each line ``$ COMMAND`` is a command
  (run by bash from the repository's root; a line ending in ``\\`` continues on the next), the
  lines after it up to the next ``$`` line are its expected output (stdout, then stderr). A
  command exits 0 unless it ends with the comment ``# exit N``;
* an HTML comment on the line before the fence says where it runs or why it does not:
  ``<!-- docs-test: cluster -->`` runs it against the local control plane with the CRDs and
  ``examples/`` applied and the operator converged (tests/integration/test_docs_commands_live.py),
  without a comment it runs with no cluster (tests/unit/test_docs_commands.py);
  ``<!-- docs-test: skip REASON -->`` is a block that cannot run here, with the reason;
* every other block whose info string is ``sh``, ``bash`` or ``shell``, or whose first line starts
  with ``$ ``, must be a console block or carry a skip comment: an unmarked command block fails.

The expected output is compared after a small normalisation: trailing spaces and blank lines at
the end are dropped; a line ``...`` stands for any number of lines (none included); in a line,
``<age>`` matches a kubectl age (``7s``, ``2m3s``), ``<n>`` a number.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
MARKER = re.compile(r"^\s*<!-- docs-test: (cluster|skip)(?: (.+?))? -->\s*$")
FENCE = re.compile(r"^(\s*)(```+)(\S*)\s*$")
EXIT = re.compile(r"#\s*exit (\d+)\s*$")
PLACEHOLDERS = {"<age>": r"[0-9smhdy]+", "<n>": r"[0-9]+(?:\.[0-9]+)?"}
#: Help texts are wrapped to the terminal's width: the docs show them at 80 columns.
COLUMNS = "80"


def documents() -> list[Path]:
    """The pages whose commands are checked."""
    return [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "examples" / "README.md",
        ROOT / "manifests" / "README.md",
        ROOT / "manifests" / "helm" / "elastic-quota-operator" / "README.md",
    ]


@dataclass(frozen=True)
class Command:
    line: str
    expected: tuple[str, ...]
    exit_code: int


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    language: str
    marker: str | None  # "cluster", "skip" or None
    reason: str | None
    body: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def is_command_block(self) -> bool:
        first = next((line for line in self.body if line.strip()), "")
        return self.language in COMMAND_LANGUAGES or first.lstrip().startswith("$ ")

    def commands(self) -> list[Command]:
        """The ``$`` lines of a console block and the output shown under each."""
        found: list[Command] = []
        current: list[str] | None = None
        expected: list[str] = []
        continued = False
        for raw in self.body:
            if continued and current is not None:
                current.append(raw.strip())
                continued = raw.rstrip().endswith("\\")
                continue
            if raw.startswith("$ "):
                if current is not None:
                    found.append(command_of(current, expected))
                current, expected = [raw[2:]], []
                continued = raw.rstrip().endswith("\\")
            elif current is not None:
                expected.append(raw)
        if current is not None:
            found.append(command_of(current, expected))
        return found


def command_of(lines: list[str], expected: list[str]) -> Command:
    line = "\n".join(lines)
    code = EXIT.search(lines[-1])
    return Command(line, tuple(expected), int(code.group(1)) if code else 0)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown page (nested indentation kept out of the body)."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence, language = opening.groups()
        before = lines[index - 1] if index else ""
        marker = MARKER.match(before)
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = tuple(
            line[len(indent) :] if line.startswith(indent) else line
            for line in lines[index + 1 : end]
        )
        found.append(
            Block(
                path=path,
                line=index + 1,
                language=language,
                marker=marker.group(1) if marker else None,
                reason=marker.group(2) if marker else None,
                body=body,
            )
        )
        index = end + 1
    return found


def command_blocks() -> list[Block]:
    return [block for path in documents() for block in blocks(path) if block.is_command_block]


def write_scripts(directory: Path) -> Path:
    """The launchers pip writes for pyproject's ``[project.scripts]`` (``elastic-quota`` and the
    kubectl plugin ``kubectl-elastic_quota``), for this interpreter, in ``directory``."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name, entry in scripts.items():
        module, function = entry.split(":")
        path = directory / name
        path.write_text(
            f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\n"
            f"sys.exit({function}())\n"
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


def environment(scripts: Path, **extra: str) -> dict[str, str]:
    """The commands' environment: this checkout's program (its launchers in ``scripts``, from
    :func:`write_scripts`), sources and interpreter first on the paths; help at 80 columns."""
    tools = str(Path(sys.executable).parent)
    source_roots = [str(ROOT / "operator"), str(ROOT / "devtools")]
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(scripts), tools, os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join([*source_roots, os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": COLUMNS,
        **extra,
    }


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    output: str


def run(command: Command, env: dict[str, str], timeout: float = 60) -> Outcome:
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command.line],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    return Outcome(done.returncode, done.stdout + done.stderr)


def line_pattern(expected: str) -> re.Pattern[str]:
    parts = re.split("(" + "|".join(map(re.escape, PLACEHOLDERS)) + ")", expected.rstrip())
    return re.compile("".join(PLACEHOLDERS.get(part, re.escape(part)) for part in parts))


def trimmed(lines: list[str] | tuple[str, ...]) -> list[str]:
    kept = [line.rstrip() for line in lines]
    while kept and not kept[-1]:
        kept.pop()
    return kept


def matches(expected: tuple[str, ...], actual: str) -> bool:
    """Whether the real output is the shown one, ``...`` lines standing for any lines."""
    patterns = trimmed(expected)
    lines = trimmed(actual.splitlines())

    def match(pattern_index: int, line_index: int) -> bool:
        if pattern_index == len(patterns):
            return line_index == len(lines)
        if patterns[pattern_index].strip() == "...":
            return any(match(pattern_index + 1, skip) for skip in range(line_index, len(lines) + 1))
        if line_index == len(lines):
            return False
        if line_pattern(patterns[pattern_index]).fullmatch(lines[line_index]) is None:
            return False
        return match(pattern_index + 1, line_index + 1)

    return match(0, 0)


def check(block: Block, env: dict[str, str]) -> list[str]:
    """Run a console block's commands; a message per command whose outcome is not the shown."""
    failures = []
    for command in block.commands():
        outcome = run(command, env)
        if outcome.exit_code != command.exit_code or not matches(command.expected, outcome.output):
            shown = "\n".join(command.expected)
            failures.append(
                f"{block.where}: $ {command.line}\n"
                f"exit {outcome.exit_code} (the docs: {command.exit_code})\n"
                f"--- the docs show ---\n{shown}\n--- it printed ---\n{outcome.output}"
            )
    return failures
