"""The repository's own tools as the unit tests find them (the pinned helm of ``make``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def find_helm() -> str | None:
    """``$HELM``, else the helm ``make`` pins under .venv/tools, else one on the PATH."""
    pinned = ROOT / ".venv" / "tools" / "node_modules" / ".bin" / "helm"
    for candidate in (os.environ.get("HELM"), str(pinned) if pinned.exists() else None):
        if candidate:
            return candidate
    return shutil.which("helm")
