"""What the benchmark prints: progress on stderr, figures from the operator's histograms, and
the stall watchdog's reports from its logs."""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scalebench.options import BenchmarkError


def say(message: str) -> None:
    """Progress, on stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (NaN for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass(frozen=True, slots=True)
class Histogram:
    """One histogram family of an exposition: cumulative bucket counts by upper bound, sum."""

    buckets: dict[float, float]
    sum: float
    count: float

    def minus(self, earlier: Histogram) -> Histogram:
        return Histogram(
            {le: n - earlier.buckets.get(le, 0.0) for le, n in self.buckets.items()},
            self.sum - earlier.sum,
            self.count - earlier.count,
        )

    def highest_bound(self) -> float:
        """The upper bound of the highest bucket holding a sample (NaN when none)."""
        ordered = sorted(self.buckets.items())
        below = 0.0
        highest = float("nan")
        for le, cumulative in ordered:
            if cumulative > below:
                highest = le
            below = cumulative
        return highest

    def quantile(self, q: float) -> float:
        """As PromQL's ``histogram_quantile``: linear within the bucket holding the rank."""
        ordered = sorted(self.buckets.items())
        if not ordered or ordered[-1][1] <= 0:
            return float("nan")
        rank = q * ordered[-1][1]
        lower, below = 0.0, 0.0
        for le, cumulative in ordered:
            if cumulative >= rank:
                if math.isinf(le):
                    return lower  # beyond the last finite bound: that bound is all we know
                if cumulative == below:
                    return le
                return lower + (le - lower) * (rank - below) / (cumulative - below)
            lower, below = le, cumulative
        return lower


def parse_histogram(text: str, name: str) -> Histogram:
    buckets: dict[float, float] = {}
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            labels, value = line.rsplit(" ", 1)
            le = labels.split('le="', 1)[1].split('"', 1)[0]
            buckets[float(le)] = buckets.get(float(le), 0.0) + float(value)
        elif line.startswith(f"{name}_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith(f"{name}_count"):
            count += float(line.rsplit(" ", 1)[1])
    if not buckets:
        raise BenchmarkError(f"the operator's /metrics has no histogram {name}")
    return Histogram(buckets, total, count)


def ms(seconds: float) -> str:
    return "NA" if math.isnan(seconds) else f"{seconds * 1000:.1f}"


STALL_REPORT = re.compile(
    r"the event loop has been held for ([0-9.]+) s"
    r"(?: \(its thread ran ([0-9.]+) s of it, the process's other threads ([0-9.]+) s\))?, in:"
)
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def stall_reports(log: Path) -> list[tuple[str, str]]:
    """The operator's stall watchdog reports in ``log``: how long the loop had been held when
    reported (with the CPU seconds its thread and the process's other threads ran meanwhile:
    ``ran/others``), and the innermost frame of the project's own code in the stack it logged."""
    reports: list[tuple[str, str]] = []
    held: str | None = None
    where = "(no frame of the project's own code)"
    for line in [*log.read_text(errors="replace").splitlines(), "end"]:
        frame = FRAME.search(line)
        if held is not None and frame is not None:
            path, number, function = frame.groups()
            if "/elasticquota/" in path:
                where = f"{path.split('/elasticquota/')[-1]}:{number} {function}"
            continue
        if held is not None and not line.startswith(" "):
            reports.append((held, where))
            held, where = None, "(no frame of the project's own code)"
        if (match := STALL_REPORT.search(line)) is not None:
            length, ran, others = match.groups()
            held = f"{float(length):.2f}s" + (f" ran {ran}/others {others}" if ran else "")
    return reports


def print_stalls(log_dir: Path) -> None:
    """One line per operator: its watchdog's reports (the loop held beyond ``LOOP_BUDGET``; each
    report is when it was noticed, not the stall's whole length, which the loop line bounds)."""
    for log in sorted(log_dir.glob("operator-*.log")):
        reports = stall_reports(log)
        print(
            f"scale stalls operator={log.stem.removeprefix('operator-')} count={len(reports)}"
            f"{''.join(f' | {held} {where}' for held, where in reports)}",
            flush=True,
        )
