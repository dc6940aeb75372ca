"""The wheel and the image hold the operator only: no development tooling.

The local control plane, the node simulation and the demo live in ``devtools/eqdev`` (on the path
of make, pytest, mypy, ruff and import-linter); the package is ``operator/``'s ``elasticquota``.
setuptools' own ``build_py`` (what ``bdist_wheel`` puts in the wheel, from pyproject's package
discovery) runs into a temporary directory, a second or two: it must build ``elasticquota`` alone,
with none of the tooling's modules. The image's build stage copies only what the wheel is made of.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from elasticquota.cli import parser

ROOT = Path(__file__).resolve().parents[2]
#: Module names of the development tooling, wherever they would end up.
TOOLING = re.compile(r"(^|/)(eqdev|devcluster|simulator|demo[_a-z]*)(/|\.py$)")


def built_modules(tmp_path: Path) -> list[str]:
    """The files ``build_py`` puts in the wheel, relative to its root (nothing is written into
    the repository: the egg-info goes to ``tmp_path`` too)."""
    lib = tmp_path / "lib"
    script = (
        "import setuptools; setuptools.setup(script_args=['-q', 'egg_info', '--egg-base', "
        f"{str(tmp_path)!r}, 'build_py', '--build-lib', {str(lib)!r}])"
    )
    subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return sorted(path.relative_to(lib).as_posix() for path in lib.rglob("*") if path.is_file())


def test_the_wheel_holds_elasticquota_and_no_development_tooling(tmp_path: Path) -> None:
    files = built_modules(tmp_path)

    assert {name.split("/")[0] for name in files} == {"elasticquota"}
    assert "elasticquota/controller/runner.py" in files  # the operator itself is there
    assert "elasticquota/py.typed" in files
    assert [name for name in files if TOOLING.search(name)] == []


def test_the_shipped_command_line_has_no_demo(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["demo"])
    assert "invalid choice: 'demo'" in capsys.readouterr().err


def test_the_image_is_built_from_the_package_sources_only() -> None:
    """The build stage's ``COPY`` lines (the runtime stage copies the built venv ``--from`` it)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied = [
        source
        for line in dockerfile.splitlines()
        if line.startswith("COPY ") and "--from=" not in line
        for source in line.split()[1:-1]
    ]
    assert sorted(copied) == ["README.md", "constraints.txt", "operator", "pyproject.toml"]
