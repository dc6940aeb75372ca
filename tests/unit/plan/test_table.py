"""The ``plan`` table: trees drawn with indentation, one row per resource, readable in a
100-column terminal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from elasticquota.core import keys
from elasticquota.core.decisions.admission import Shortfall
from elasticquota.core.userlimits.limits import LimitEntry
from elasticquota.core.userlimits.records import SubjectUsage
from elasticquota.plan.compute import Plan, compute_plan
from elasticquota.plan.loader import load_paths
from elasticquota.plan.table import cell, header, readable, render_plan, usage_row

if TYPE_CHECKING:
    from conftest import K8s, Writer

GI = 1024**3


def plan_of(*paths: Path) -> Plan:
    return compute_plan(load_paths(paths))


def rows_of(text: str, quota: str) -> list[str]:
    """The quota's rows: its first row (named) and the unnamed rows that follow it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line[:30].strip() == quota)
    rows = [lines[start]]
    for line in lines[start + 1 :]:
        if line[:30].strip() or not line.startswith(" "):
            break
        rows.append(line)
    return rows


def named_rows(text: str) -> list[tuple[int, str]]:
    """(indentation, quota name) of every quota's first row, top to bottom."""
    table = text.split("\n\n")[0].splitlines()[1:]
    return [
        (len(line) - len(line.lstrip()), line[:30].strip())
        for line in table
        if line[:30].strip() and not line.startswith(("default tree", "tree "))
    ]


@pytest.fixture
def example_table(examples: Path) -> str:
    return render_plan(plan_of(examples))


def test_every_line_of_the_example_fits_100_columns(example_table: str) -> None:
    assert max(len(line) for line in example_table.splitlines()) <= 100


def test_the_header_names_the_five_figures(example_table: str) -> None:
    assert example_table.splitlines()[0] == header()
    assert header().split() == ["QUOTA", "RESOURCE", "MIN", "MAX", "REQUEST", "USED", "RUNTIME"]


def test_quotas_are_indented_two_spaces_per_level(example_table: str) -> None:
    assert named_rows(example_table) == [
        (0, "koordinator-root-quota"),
        (2, "analytics"),
        (2, "engineering"),
        (4, "ml-research"),
        (4, "platform"),
        (6, "platform-ci"),
        (6, "platform-web"),
        (2, "gpu-root"),
        (4, "gpu-inference"),
        (4, "gpu-training"),
    ]


def test_each_resource_is_a_row_with_min_max_request_used_runtime(example_table: str) -> None:
    rows = rows_of(example_table, "ml-research")
    assert [row.split()[-6:] for row in rows] == [
        ["cpu", "16", "48", "40", "40!", "28.571"],
        ["memory", "64Gi", "192Gi", "80Gi", "80Gi", "80Gi"],
    ]


def test_used_above_runtime_is_flagged(example_table: str) -> None:
    assert rows_of(example_table, "analytics")[0].split()[-2] == "8"
    assert rows_of(example_table, "engineering")[0].split()[-2] == "52!"


def test_each_tree_is_introduced_with_its_total(example_table: str) -> None:
    lines = example_table.splitlines()
    assert "default tree (total: cpu 64, memory 256Gi, nvidia.com/gpu 0, pods 440)" in lines
    assert any(line.startswith("tree ") and "nvidia.com/gpu 16" in line for line in lines)


def test_a_profile_tree_is_titled_by_its_profile_with_its_id_cut_short(
    example_table: str,
) -> None:
    lines = example_table.splitlines()
    title = "tree gpu-pool (id 1513…, total: cpu 64, memory 256Gi, nvidia.com/gpu 16, pods 220)"
    assert title in lines
    assert "15138299097917482161" not in example_table  # the full id is in -o json


def test_an_unset_max_shows_as_a_dash_not_as_the_huge_ceiling(example_table: str) -> None:
    """The profile root's max is the "no limit" ceiling (MaxInt64 / 2000): shown as "-"."""
    assert [row.split()[-6:-4] for row in rows_of(example_table, "gpu-root")] == [
        ["cpu", "64"],
        ["memory", "256Gi"],
        ["nvidia.com/gpu", "16"],
    ]
    assert [row.split()[-4] for row in rows_of(example_table, "gpu-root")] == ["-", "-", "-"]
    assert "~" not in example_table


def test_every_cpu_cell_is_in_cores_with_up_to_three_decimals(example_table: str) -> None:
    lines = example_table.split("\n\n")[0].splitlines()
    cpu_rows = [line.split() for line in lines if line[31:49].strip() == "cpu"]
    cells = [value.rstrip("!") for row in cpu_rows for value in row[-5:]]
    assert cells and all(re.fullmatch(r"-|\d+(\.\d{1,3})?", value) for value in cells), cells
    assert {"19.429", "44.571", "28.571", "40", "64"} <= set(cells)


def test_pending_pods_and_revocations_have_their_sections(example_table: str) -> None:
    text = example_table
    assert "\nPending pods:\n" in text
    assert (
        "  wait  analytics/report-3 (analytics): quota analytics: cpu used 8 + request 16 > "
        "runtime 19.429" in text
    )
    assert "  admit analytics/report-2 (analytics)\n" in text
    assert "  ml-research: ml-research/train-4, ml-research/train-5\n" in text
    assert "  engineering: no own pods to evict at this level\n" in text
    assert "Problems:" not in text


def test_the_resources_filter_keeps_only_the_named_resources(examples: Path) -> None:
    text = render_plan(plan_of(examples), {"cpu"})
    assert rows_of(text, "ml-research") == [
        rows_of(render_plan(plan_of(examples)), "ml-research")[0]
    ]
    assert " memory " not in text
    assert "default tree (total: cpu 64)" in text


def test_a_quota_without_the_filtered_resources_keeps_its_name_row(examples: Path) -> None:
    text = render_plan(plan_of(examples), {"nvidia.com/gpu"})
    assert "  analytics" in text.splitlines()
    assert rows_of(text, "gpu-training")[0].split()[-6:] == [
        "nvidia.com/gpu",
        "12",
        "16",
        "8",
        "8",
        "8",
    ]


def test_idle_system_and_default_quotas_are_not_drawn(example_table: str) -> None:
    assert keys.SYSTEM_QUOTA not in example_table
    assert keys.DEFAULT_QUOTA not in example_table


def test_a_busy_default_quota_is_drawn(k8s: type[K8s], write: Writer) -> None:
    path = write(k8s.node("n1", {"cpu": "4"}), k8s.pod("stray", "nowhere", {"cpu": "1"}))
    assert (2, keys.DEFAULT_QUOTA) in named_rows(render_plan(plan_of(path)))


# -- cells ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [
        ("cpu", None, "-"),
        ("cpu", 1500, "1.5"),
        ("cpu", 500, "0.5"),
        ("cpu", 1, "0.001"),
        ("cpu", 28_571, "28.571"),
        ("cpu", 40_000, "40"),
        ("cpu", 1_000_000, "1000"),
        ("cpu", 0, "0"),
        ("memory", 80 * GI, "80Gi"),
        ("memory", 1536 * 2**20, "1536Mi"),
        ("cpu", 123_456_789, "~123k"),
        ("memory", 3 * 2**50 + 1, "~3Pi"),
        ("cpu", keys.PROFILE_ROOT_MAX * 1000 - 1, "~4.61P"),
        ("pods", 1_234_567_891, "~1.23G"),
        # Bytes read in binary suffixes, whatever the API's canonical form (DecimalSI for these).
        ("ephemeral-storage", 4 * GI, "4Gi"),
        ("ephemeral-storage", 200 * 2**40, "200Ti"),
        ("ephemeral-storage", 23 * 2**40 + 5, "~23Ti"),
        ("storage", 10**9, "~954Mi"),
        ("hugepages-2Mi", 512 * 2**20, "512Mi"),
        ("nvidia.com/gpu", 8, "8"),
        ("example.com/bytes-of-nothing", 4 * GI, "~4.29G"),
    ],
)
def test_a_cell_is_exact_when_it_fits_and_approximated_with_a_tilde_otherwise(
    resource: str, units: int | None, text: str
) -> None:
    assert cell(resource, units) == text
    assert len(cell(resource, units)) <= 9


@pytest.mark.parametrize(
    ("resource", "units"),
    [
        ("cpu", keys.PROFILE_ROOT_MAX * 1000),  # a profile root's max
        ("memory", keys.PROFILE_ROOT_MAX),
        ("nvidia.com/gpu", keys.PROFILE_ROOT_MAX),
        ("cpu", keys.RESERVED_GROUP_MAX * 1000),  # the system and default quotas' max
        ("memory", keys.RESERVED_GROUP_MAX),
        ("cpu", 2**62 - 1),  # the solver's clamp
        ("memory", 2**63 - 1),  # MaxInt64, as users write "no limit"
    ],
)
def test_a_value_at_or_above_the_no_limit_ceiling_is_a_dash(resource: str, units: int) -> None:
    assert cell(resource, units) == "-"


def test_a_blocked_pod_is_explained_in_the_table_units_and_in_kubernetes_units_in_json(
    examples: Path,
) -> None:
    plan = plan_of(examples)
    waiting = next(verdict for verdict in plan.admission if not verdict.admitted)
    assert waiting.reason.endswith("> runtime 19429m")  # pod condition and -o json: quantities
    assert waiting.reason.replace("19429m", "19.429") in render_plan(plan)


def test_lines_of_text_give_bytes_exactly_with_their_suffix_not_as_counts_of_bytes() -> None:
    """A cell approximates 25G of memory in binary suffixes; the pending pods' lines and the
    usage rows, which have the room, say it as written, not 25000000000 (nor 19531250Ki for
    20G)."""
    assert cell("memory", 25 * 10**9) == "~23.3Gi"
    blocked = Shortfall("team", "memory", "runtime", 20 * 10**9, 10**9, 25 * 10**9)
    assert blocked.describe(readable) == "quota team: memory used 20G + request 1G > runtime 25G"
    limit = LimitEntry(
        0, users=("sue",), max_resources={"ephemeral-storage": 20 * GI, "memory": 25 * 10**9}
    )
    usage = SubjectUsage(
        "user",
        "sue",
        "team",
        {"ephemeral-storage": 15 * GI, "memory": 12 * GI},
        frozenset({"a"}),
        limit,
        "#1",
    )
    row = " ".join(line.strip() for line in usage_row(usage, None))  # wrapped at 100 columns
    assert row.endswith("ephemeral-storage 15Gi/20Gi, memory 12Gi/25G")


def test_every_cell_fits_nine_characters() -> None:
    for resource in ("cpu", "memory", "pods"):
        for exponent in range(0, 40):
            assert len(cell(resource, 7 * 10**exponent + 3)) <= 9, (resource, exponent)


# -- width under stress -----------------------------------------------------------------------


def test_long_names_deep_trees_long_resources_and_long_problems_fit_100_columns(
    k8s: type[K8s], write: Writer
) -> None:
    long = "a-quota-with-a-very-long-name-that-goes-on-and-on"
    resources = {
        "cpu": "123456789m",
        "memory": "1000001",
        "example.com/an-extended-resource-with-a-long-name": "7",
        "hugepages-1Gi": "3Gi",
        "ephemeral-storage": "123456789012345",
    }
    quotas = [k8s.quota(f"{long}-0", max=resources, is_parent=True, namespace="ns")]
    for depth in range(1, 12):
        quotas.append(
            k8s.quota(
                f"{long}-{depth}",
                max=resources,
                parent=f"{long}-{depth - 1}",
                is_parent=True,
                namespace=f"ns{depth}",
            )
        )
    path = write(
        k8s.node("n1", resources),
        *quotas,
        k8s.pod("p" * 60, "ns11", dict(resources), quota=f"{long}-11"),
        k8s.quota("broken", max={"cpu": "x" * 150}),
        k8s.quota("orphan", max={"cpu": "1"}, parent="y" * 120),
    )
    plan = plan_of(path)
    assert len(plan.problems) >= 3
    text = render_plan(plan)
    assert "Problems:" in text
    for line in text.splitlines():
        assert len(line) <= 100, line
    # Nothing of the long texts is lost: continuation lines carry the rest.
    assert "x" * 80 in text.replace("\n", "").replace(" ", "")
    assert "example.com/an-ex…" in text


def test_wrapped_entries_are_indented_under_their_section(k8s: type[K8s], write: Writer) -> None:
    path = write(k8s.quota("broken", max={"cpu": "x" * 150}))
    lines = render_plan(plan_of(path)).splitlines()
    entries = lines[lines.index("Problems:") + 1 :]
    assert entries[0].startswith("  ElasticQuota broken/broken: spec.max.cpu: quantity 'xxx")
    assert entries[1].startswith("      xxx")
    assert entries[2].startswith("      xxx")
    assert entries[2].endswith("' is not a valid Kubernetes quantity")
    assert entries[3] == "  ElasticQuota broken/broken: the quota is left out of its tree"
