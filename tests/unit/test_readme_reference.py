"""The README's configuration reference lists exactly the operator's settings.

``Settings`` is the one typed place for the operator's knobs; the README's table is what users
read. A setting added without a row, or a row left behind by a removed setting, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from elasticquota.settings import Settings

README = Path(__file__).resolve().parents[2] / "README.md"
ROW = re.compile(r"^\| `([A-Z_]+)` \|", re.MULTILINE)


def configuration_rows() -> list[str]:
    text = README.read_text()
    start = text.index("## Configuration reference")
    end = text.index("\n## ", start + 1)
    return ROW.findall(text[start:end])


def test_every_setting_has_one_row() -> None:
    rows = configuration_rows()
    settings = sorted(name.upper() for name in Settings.model_fields)
    assert sorted(rows) == settings
    assert len(rows) == len(set(rows)), "a setting is listed twice"


NUMBER = re.compile(r"^`(-?[0-9]+(?:\.[0-9]+)?)`")


def test_numeric_defaults_match_the_settings() -> None:
    settings = Settings(identity="readme")
    checked = 0
    for line in README.read_text().splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        default_cell = line.split("|")[3].strip()
        number = NUMBER.match(default_cell)
        if number is None:
            continue
        value = getattr(settings, match.group(1).lower())
        assert float(number.group(1)) == float(value), f"{match.group(1)}: README {default_cell}"
        checked += 1
    assert checked >= 8, "the table's numeric defaults were not found"


RANGE = re.compile(r"^`(-?[0-9.]+)`–`([0-9.]+)`")


def test_the_allowed_column_is_each_settings_range() -> None:
    """Numbers: the bounds of the field; names (log level, failure policy): all of them."""
    schema = Settings.model_json_schema()["properties"]
    checked = 0
    for line in README.read_text().splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        name = match.group(1).lower()
        cell = line.split("|")[5].strip()
        field = schema[name]
        if field.get("type") in ("number", "integer"):
            bounds = RANGE.match(cell)
            assert bounds is not None, f"{name}: no range in {cell!r}"
            assert float(bounds.group(1)) == field["minimum"], name
            assert float(bounds.group(2)) == field["maximum"], name
            checked += 1
        elif "enum" in field:
            assert all(f"`{choice}`" in cell for choice in field["enum"]), name
            checked += 1
    assert checked >= 10, "the table's ranges were not found"
