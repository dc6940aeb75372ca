"""``eqdev.lowest``: each runtime dependency pinned to its lower bound, for ``make test-lowest``."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqdev.lowest import NoLowerBoundError, lowest_pin, lowest_pins, main

PYPROJECT = """
[project]
name = "x"
dependencies = [
    "kopf>=1.41",  # a comment
    "aiohttp>=3.12,<4",
    "numba~=0.59.1",
    "PyYAML==6.0.1",
]

[project.optional-dependencies]
dev = ["pytest>=8"]
"""


def test_each_runtime_dependency_is_pinned_to_its_lower_bound() -> None:
    assert lowest_pins(PYPROJECT) == [
        "kopf==1.41",
        "aiohttp==3.12",
        "numba==0.59.1",
        "PyYAML==6.0.1",
    ]


@pytest.mark.parametrize("text", ["kopf", "kopf<2", "kopf>=1.41,>=1.42"])
def test_a_dependency_without_exactly_one_lower_bound_is_refused(text: str) -> None:
    with pytest.raises(NoLowerBoundError, match="lower bounds"):
        lowest_pin(text)


def test_the_projects_own_bounds_all_have_one(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[3]
    assert main([str(root / "pyproject.toml")]) == 0
    pins = capsys.readouterr().out.split()
    assert pins and all("==" in pin for pin in pins)


def test_a_file_without_dependencies_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n')
    assert main([str(path)]) == 2
    assert "no [project] dependencies" in capsys.readouterr().err
