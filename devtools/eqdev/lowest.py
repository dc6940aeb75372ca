"""The lowest versions ``pyproject.toml`` allows, as pip constraints (``make test-lowest``).

``constraints.txt`` pins what the suite runs on: the newest releases the ranges allowed when it
was last resolved. The ranges' lower bounds are a promise of their own, to whoever installs the
package next to older releases, and nothing exercises them there. ``make test-lowest`` does: each
runtime dependency's lower bound (``name>=X``) becomes the constraint ``name==X``, the project and
its dev tools are installed under those constraints in a venv of their own, and the unit and KMock
tiers run there. A failure names the release the code has outgrown: raise that bound.

``python -m eqdev.lowest [pyproject.toml]`` prints the constraints, one per line.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

#: The specifier operators that state a lowest allowed version.
LOWER_BOUNDS = (">=", "==", "~=")


class NoLowerBoundError(ValueError):
    """A runtime dependency without exactly one lower bound: nothing to pin it to."""


def lowest_pin(text: str) -> str:
    """``name==X`` for the requirement ``text`` whose lowest allowed version is ``X``."""
    requirement = Requirement(text)
    lows = [spec.version for spec in requirement.specifier if spec.operator in LOWER_BOUNDS]
    if len(lows) != 1:
        raise NoLowerBoundError(
            f"dependency {text!r}: {len(lows)} lower bounds (>=, ==, ~=), one is needed"
        )
    return f"{requirement.name}=={lows[0]}"


def lowest_pins(pyproject: str) -> list[str]:
    """The constraints of the runtime dependencies of ``pyproject`` (its text), in its order."""
    dependencies = tomllib.loads(pyproject).get("project", {}).get("dependencies")
    if not dependencies:
        raise NoLowerBoundError("no [project] dependencies")
    return [lowest_pin(text) for text in dependencies]


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "pyproject.toml")
    try:
        pins = lowest_pins(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, NoLowerBoundError) as error:
        print(f"eqdev.lowest: {path}: {error}", file=sys.stderr)
        return 2
    print("\n".join(pins))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
