"""``constraints.txt``: the exact versions ``make install`` and the image install.

Every dependency ``pyproject.toml`` declares (the runtime ones and the ``dev`` extra) is pinned
there with ``==``, to a version its specifier allows; the suite runs on exactly those versions
(``make install`` installs with ``--constraint``, and reinstalls when the file changes); the
image's build stage installs the wheel with the same file. A release upstream (Kopf's private
members the webhooks use, ``controller.webhooks.kopfhooks``, may move in any minor release) then
changes nothing until ``make constraints`` moves the pins and a ``make test`` passes on them.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
#: One pin: a distribution's name and an exact version, nothing else on the line.
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")


def pins(text: str) -> dict[str, str]:
    """The pinned versions by canonical name; a line that is no pin (nor comment) is refused."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line)
        if match is None:
            raise ValueError(f"constraints.txt line {number}: {line!r} is not name==version")
        name = canonicalize_name(match["name"])
        if name in found:
            raise ValueError(f"constraints.txt line {number}: {name} is pinned twice")
        found[name] = match["version"]
    return found


def declared() -> list[Requirement]:
    """The project's runtime dependencies and its ``dev`` extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]] + [
        Requirement(text) for text in project["optional-dependencies"]["dev"]
    ]


@pytest.fixture(scope="module")
def pinned() -> dict[str, str]:
    return pins((ROOT / "constraints.txt").read_text())


def test_every_declared_dependency_is_pinned_to_a_version_it_allows(
    pinned: dict[str, str],
) -> None:
    for requirement in declared():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        version = pinned.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(Version(version), prereleases=True), (
            f"constraints.txt pins {requirement.name}=={version}, outside {requirement}"
        )


def test_the_suite_runs_on_the_pinned_versions(pinned: dict[str, str]) -> None:
    """This interpreter has each pinned distribution at its pinned version, and each one is
    installed (a pin nothing needs any more is a stale line: ``make constraints``)."""
    installed = {name: _installed_version(name) for name in pinned}
    assert installed == pinned, "the venv is not constraints.txt's: run make install"


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_the_project_itself_and_pip_are_not_pinned(pinned: dict[str, str]) -> None:
    assert "elastic-quota-operator" not in pinned
    assert "pip" not in pinned  # make install upgrades pip first, then installs with the pins


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("kopf>=1.41\n", "line 1: 'kopf>=1.41' is not name==version"),
        ("# pins\nkopf==1.45.2\n-e /work\n", "line 3: '-e /work' is not name==version"),
        ("Kopf==1.45.2\nkopf==1.45.1\n", "line 2: kopf is pinned twice"),
        ("numba==0.68.1 ; python_version < '3.12'\n", "is not name==version"),
    ],
)
def test_a_line_that_is_no_exact_pin_is_refused(text: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=re.escape(refusal)):
        pins(text)


def test_make_install_and_the_image_install_with_the_pins() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "CONSTRAINTS := constraints.txt" in makefile
    assert "$(STAMP): pyproject.toml $(CONSTRAINTS)" in makefile  # a new pin reinstalls
    assert "pip install --quiet --constraint $(CONSTRAINTS) -e '.[dev]'" in makefile
    dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    installs = [line for line in dockerfile.splitlines() if "/bin/pip install" in line]
    assert installs and all("--constraint constraints.txt" in line for line in installs)
    assert "!constraints.txt" in (ROOT / ".dockerignore").read_text().splitlines()
