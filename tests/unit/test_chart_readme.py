"""The chart's README is generated from the values' comments (manifests/tools/chart_readme.py):
the committed one is current (``make check-chart`` checks it too), every value has a
description, and the generator reads helm-docs' ``# --`` comments the way values.yaml uses them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from repo_tools import ROOT

sys.path.insert(0, str(ROOT / "manifests" / "tools"))
import chart_readme

VALUES = """\
# Header of the file: not a description.

# -- Replicas: all serve,
# one writes.
replicaCount: 2
image:
  # -- The repository.
  repository: eq
  pullPolicy: IfNotPresent
# -- Resources, one row.
resources:
  limits:
    cpu: "1"
"""


def test_the_committed_chart_readme_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manifests" / "tools" / "chart_readme.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_value_has_a_description() -> None:
    assert chart_readme.undocumented() == []


def test_descriptions_and_rows_from_the_comments(tmp_path: Path) -> None:
    descriptions = chart_readme.documented_keys(VALUES)
    assert descriptions == {
        "replicaCount": "Replicas: all serve, one writes.",
        "image.repository": "The repository.",
        "resources": "Resources, one row.",
    }
    rows = chart_readme.rows(yaml.safe_load(VALUES), descriptions)
    assert [(row.path, row.default, row.description) for row in rows] == [
        ("replicaCount", 2, "Replicas: all serve, one writes."),
        ("image.repository", "eq", "The repository."),
        ("image.pullPolicy", "IfNotPresent", ""),
        ("resources", {"limits": {"cpu": "1"}}, "Resources, one row."),
    ]
    (tmp_path / "values.yaml").write_text(VALUES)
    (tmp_path / "Chart.yaml").write_text(
        "name: eq\ndescription: d\nversion: 1.0.0\nappVersion: '1'\nkubeVersion: '>=1.20'\n"
    )
    text = chart_readme.render(tmp_path)
    assert '| `resources` | `{"limits": {"cpu": "1"}}` | Resources, one row. |' in text
    assert chart_readme.undocumented(tmp_path) == ["image.pullPolicy"]


def schema_of(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for key in path.split("."):
        schema = schema["properties"][key]
    return schema


RANGE = re.compile(r"\b(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)\b")


def test_the_descriptions_ranges_and_choices_are_the_schemas() -> None:
    """A description that gives a value's range ("(0.01-3600)") gives the schema's, and one that
    lists its choices, joined by commas ("DEBUG, INFO, ..."), lists every choice the schema
    allows."""
    schema = json.loads((chart_readme.CHART / "values.schema.json").read_text())
    text = (chart_readme.CHART / "values.yaml").read_text()
    wrong = []
    for path, description in chart_readme.documented_keys(text).items():
        field = schema_of(schema, path)
        for low, high in RANGE.findall(description):
            if (float(low), float(high)) != (field.get("minimum"), field.get("maximum")):
                wrong.append(f"{path}: {low}-{high}")
        written = (json.dumps(c) if not isinstance(c, str) else c for c in field.get("enum", []))
        choices = sorted((choice for choice in written if choice), key=len)[::-1]
        one = "|".join(re.escape(choice) for choice in choices)
        for listed in re.findall(rf"\b(?:{one})(?:, (?:{one}))+\b", description) if one else []:
            if set(listed.split(", ")) != set(choices):
                wrong.append(f"{path}: lists {listed!r} of {choices}")
    assert wrong == []
