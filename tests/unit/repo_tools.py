"""Where the repository is, for the unit tests that read its files (helm: ``chart_render``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
