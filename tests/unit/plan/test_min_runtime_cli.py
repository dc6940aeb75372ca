"""``--revocation-min-runtime`` of ``plan`` and ``explain``: they spare young pods as the operator
with ``REVOCATION_MIN_RUNTIME`` does, judged at the moment the command runs.

The example cluster's ml-research is over its runtime; its next round evicts train-4 (medium
priority) and train-5 (best effort). Here train-5 started seconds ago.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from elasticquota.core.decisions.minruntime import moment_text
from elasticquota.core.keys import ANNO_REVOCATION_MIN_RUNTIME

if TYPE_CHECKING:
    from conftest import CliRunner

TRAIN_5_START = 'startTime: "2026-11-20T11:00:00Z"'


#: When the fixture's train-5 started: ten seconds before the module was collected, to the second
#: (the hour these tests protect it for lasts longer than any run of the suite).
STARTED = math.ceil(time.time() - 10)


@pytest.fixture
def young_train_5(examples: Path, tmp_path: Path) -> Path:
    """The examples, train-5 started at ``STARTED``."""
    copy = shutil.copytree(examples, tmp_path / "examples")
    workloads = copy / "workloads.yaml"
    text = workloads.read_text(encoding="utf-8")
    assert text.count(TRAIN_5_START) == 1
    started = moment_text(STARTED)
    workloads.write_text(text.replace(TRAIN_5_START, f'startTime: "{started}"'), "utf-8")
    return copy


def test_plan_spares_the_young_pod_and_says_until_when(
    run_cli: CliRunner, young_train_5: Path
) -> None:
    plain = run_cli("plan", "-f", young_train_5)
    assert "  ml-research: ml-research/train-4, ml-research/train-5\n" in plain.out
    spared = run_cli("plan", "-f", young_train_5, "--revocation-min-runtime", "3600")
    assert "  ml-research: ml-research/train-4; spared for their minimum runtime: " in spared.out
    until = moment_text(STARTED + 3600)
    assert f"ml-research/train-5 (until\n      {until})" in spared.out  # the table wraps it
    document = run_cli(
        "plan", "-f", young_train_5, "--revocation-min-runtime", "3600", "-o", "json"
    ).json()
    (entry,) = [item for item in document["revocations"] if item["quota"] == "ml-research"]
    assert entry["pods"] == ["ml-research/train-4"]
    assert [item["pod"] for item in entry["spared"]] == ["ml-research/train-5"]


def test_a_minimum_the_pod_has_run_already_changes_nothing(
    run_cli: CliRunner, young_train_5: Path
) -> None:
    assert (
        run_cli("plan", "-f", young_train_5, "--revocation-min-runtime", "5").out
        == run_cli("plan", "-f", young_train_5).out
    )


def test_explain_says_the_young_pod_is_spared_and_who_goes_instead(
    run_cli: CliRunner, young_train_5: Path
) -> None:
    args = ("explain", "ml-research/train-5", "-f", young_train_5, "--revocation-min-runtime")
    verdict = run_cli(*args, "3600", "-o", "json").json()["verdict"]
    assert verdict.startswith(
        "its quota uses more than its runtime; the next revocation round would evict it but "
        "spares it until it has run 3600s (until 20"
    )
    assert verdict.endswith("choosing others instead: ml-research/train-4")
    other = run_cli(
        "explain", "ml-research/train-4", "-f", young_train_5, "--revocation-min-runtime", "3600"
    )
    assert "the next revocation round evicts it (1 pod(s): ml-research/train-4)" in other.out


ENGINEERING = """  name: engineering
  namespace: quotas
"""


def test_a_parents_annotation_spares_the_young_pod_without_the_option(
    run_cli: CliRunner, young_train_5: Path
) -> None:
    """engineering, ml-research's parent, asks for an hour: plan and explain read it."""
    quotas = young_train_5 / "quotas.yaml"
    text = quotas.read_text(encoding="utf-8")
    assert text.count(ENGINEERING) == 1
    annotated = ENGINEERING + f"  annotations: {{{ANNO_REVOCATION_MIN_RUNTIME}: 1h}}\n"
    quotas.write_text(text.replace(ENGINEERING, annotated), "utf-8")
    spared = run_cli("plan", "-f", young_train_5)
    assert "  ml-research: ml-research/train-4; spared for their minimum runtime: " in spared.out
    assert f"(until\n      {moment_text(STARTED + 3600)})" in spared.out
    verdict = run_cli("explain", "ml-research/train-5", "-f", young_train_5, "-o", "json")
    assert "spares it until it has run 3600s (until 20" in verdict.json()["verdict"]
    overruled = run_cli("plan", "-f", young_train_5, "--revocation-min-runtime", "7200")
    assert overruled.out == spared.out  # the quota's own value wins over the operator's


@pytest.mark.parametrize("value", ["-1", "soon", "604801"])
def test_a_minimum_that_is_not_a_number_of_seconds_in_range_is_refused(
    run_cli: CliRunner, examples: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        run_cli("plan", "-f", examples, "--revocation-min-runtime", value)
    assert raised.value.code == 2
    assert "argument --revocation-min-runtime: " in capsys.readouterr().err
