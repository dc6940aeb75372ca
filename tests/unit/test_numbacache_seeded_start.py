"""A replica that starts with an empty numba cache and a seed loads the solver kernel, for real.

Each start is a subprocess with its own ``NUMBA_CACHE_DIR`` (numba reads it at import), as a new
pod is: one compiles a seed with no seed of its own (what the image build does, and what any
start without a seed does), the next ones start from an empty cache dir with the seed configured.
The dispatcher's own statistics say whether the kernel was loaded (a cache hit) or compiled.
Slow (the seed's compile is about 10 s of CPU) and meaningless without the JIT. A seed that does
not match (another CPU, numba or Python) is ignored by numba, which compiles: the log line for it
is tested in ``test_numbacache``; a real one costs a second compile, checked by hand instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from elasticquota.kernels import waterfill

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not hasattr(waterfill._solve_tree_kernel, "stats"),  # a plain function without the JIT
        reason="NUMBA_DISABLE_JIT: nothing is compiled",
    ),
]

#: A start-up as ``run_operator`` does it, then what the kernel's dispatcher counted.
START = """
import json, logging, sys
from elasticquota.kernels import waterfill
from elasticquota.numbacache import start_kernels
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
warm = start_kernels(sys.argv[1] or None)
stats = waterfill._solve_tree_kernel.stats
print(json.dumps({"hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values()), "warm": warm._asdict()}))
"""


def start(cache_dir: Path, seed: Path | None) -> dict[str, Any]:
    """Start a process with ``cache_dir`` as its numba cache, as the image does (generic CPU)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("NUMBA_", "ELASTIC_QUOTA_"))
    }
    env.update(
        NUMBA_CACHE_DIR=str(cache_dir), NUMBA_CPU_NAME="generic", PYTHONDONTWRITEBYTECODE="1"
    )
    done = subprocess.run(
        [sys.executable, "-c", START, str(seed or "")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    result["log"] = done.stderr.strip()
    return result


def cache_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


class Seed(NamedTuple):
    path: Path
    build: dict[str, Any]
    """What the start that made it counted and logged."""


@pytest.fixture(scope="module")
def seed_build(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """A seed made as the image build makes it: a warm-up into an empty dir, no seed to copy."""
    path = tmp_path_factory.mktemp("numba") / "seed"
    return Seed(path, start(path, None))


@pytest.fixture
def seed(seed_build: Seed) -> Path:
    return seed_build.path


def test_a_start_without_a_seed_compiles_as_before(seed_build: Seed) -> None:
    seed, built = seed_build
    assert (built["hits"], built["misses"]) == (0, 1)
    assert built["warm"]["compiled"] == 1
    assert built["log"].startswith("INFO solver kernel compiled")
    assert built["log"].endswith(f"NUMBA_CACHE_DIR {seed}: no seed configured")
    assert any(seed.rglob("*.nbi"))  # numba wrote its cache: that is the seed


def test_an_empty_cache_dir_with_a_seed_loads_the_kernel(seed: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"  # an emptyDir: there, but empty
    cache_dir.mkdir()
    started = start(cache_dir, seed)
    assert started["hits"] > 0
    assert started["misses"] == 0  # nothing compiled
    assert started["warm"]["loaded"] > 0
    assert started["warm"]["compiled"] == 0
    assert cache_files(cache_dir) == cache_files(seed)  # the seed was copied, nothing else written
    copied = len(cache_files(seed))
    assert started["log"].startswith("INFO solver kernel loaded from numba's cache")
    assert started["log"].endswith(f"seeded with {copied} files from {seed}")


def test_a_warm_cache_is_used_as_it_is(seed: Path, tmp_path: Path) -> None:
    """A container restarted in the same pod finds its emptyDir filled: nothing is copied."""
    cache_dir = tmp_path / "cache"
    shutil.copytree(seed, cache_dir)
    (cache_dir / "kernels_other").mkdir()
    (cache_dir / "kernels_other" / "mine.py311.nbi").write_bytes(b"not the seed's")
    started = start(cache_dir, seed)
    assert (started["hits"], started["misses"]) == (1, 0)
    assert started["log"].endswith("already holds a cache: not seeded")
