"""Run the operator (``python -m elasticquota ...``) with ``tracemalloc`` on, for ``bench_scale
--trace-memory``: SIGUSR1 writes where the live Python memory was allocated to the file named by
``EQ_MEMTRACE_OUT`` (the largest source lines and files; with ``EQ_MEMTRACE_FRAMES`` above 1, the
largest call stacks too), then renames it into place.

Tracing costs time and memory of its own (a trace per live block), so the figures of a traced run
are not the operator's: only the shares are. Memory outside Python's allocators (shared libraries,
LLVM's, glibc's arenas of the worker threads) does not appear.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

TOP_LINES = 40
TOP_FILES = 25
TOP_TRACEBACKS = 15


def report() -> str:
    snapshot = tracemalloc.take_snapshot()
    lines = snapshot.statistics("lineno")
    total = sum(stat.size for stat in lines)
    out = [f"traced {total / 2**20:.1f} MiB in {sum(stat.count for stat in lines)} blocks"]
    out += [
        f"line {stat.size / 2**20:7.1f} MiB {stat.count:9d} {stat.traceback}"
        for stat in lines[:TOP_LINES]
    ]
    if tracemalloc.get_traceback_limit() > 1:
        for stat in snapshot.statistics("traceback")[:TOP_TRACEBACKS]:
            out.append(f"traceback {stat.size / 2**20:7.1f} MiB {stat.count:9d}")
            out += [f"traceback   {line}" for line in stat.traceback.format(most_recent_first=True)]
    files = snapshot.statistics("filename")
    out += [
        f"file {stat.size / 2**20:7.1f} MiB {stat.count:9d} {stat.traceback}"
        for stat in files[:TOP_FILES]
    ]
    return "\n".join(out) + "\n"


def on_signal(signum: int, frame: FrameType | None) -> None:
    target = Path(os.environ["EQ_MEMTRACE_OUT"])
    partial = target.with_suffix(".partial")
    partial.write_text(report())
    partial.rename(target)


if __name__ == "__main__":
    tracemalloc.start(int(os.environ.get("EQ_MEMTRACE_FRAMES", "1")))
    signal.signal(signal.SIGUSR1, on_signal)
    sys.argv = ["elasticquota", *sys.argv[1:]]
    runpy.run_module("elasticquota", run_name="__main__", alter_sys=True)
