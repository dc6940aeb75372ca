"""Start with a warm solver kernel: seed numba's on-disk cache from a precompiled copy.

numba compiles the solver kernel on its first call (about 10 s of CPU) unless ``NUMBA_CACHE_DIR``
already holds it. The Helm chart mounts an emptyDir there (the root file system is read-only), so
every new replica (a rolling upgrade, a rescheduled pod, a scale-out) would start with an empty
cache and compile before it could become ready. The image therefore ships a seed: the cache as
the image build's warm-up left it, made in the image's final layout (numba keys a cache directory
by the absolute directory of the kernel's source file, and checks the source's stamp, the numba
and Python versions and the target CPU, built as ``NUMBA_CPU_NAME=generic`` so that any x86-64 node
matches). At start-up, ``start_kernels`` copies the seed into an empty ``NUMBA_CACHE_DIR`` and then
warms up, which loads instead of compiling. numba cannot use the read-only seed in place: it only
accepts a cache directory it can write to (with none writable at all, importing the kernels fails:
"cannot cache function ...: no locator available").

It is harmless everywhere else: without a seed, or with a cache already there, nothing is copied;
a seed that does not match (another numba, Python or CPU) is ignored by numba, which compiles as
it always did. One log line says whether the kernel came from the cache and how long it took.

``python -m elasticquota.numbacache`` runs the same start-up step alone: the image build makes the
seed with it and checks, in the final image, that the seed loads (``--require-cached``).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

from elasticquota.kernels.warmup import WarmUp, warm_up
from elasticquota.settings import Settings

log = logging.getLogger(__name__)

#: numba's index files: one per cached function, naming its data files (``*.nbc``).
INDEX_SUFFIX = ".nbi"


class Seeding(NamedTuple):
    """What seeding did to ``NUMBA_CACHE_DIR``."""

    copied: int
    """Files copied from the seed (0: nothing was copied)."""
    note: str
    """Why nothing was copied, or where the copy came from."""


def cache_dir_from_env() -> Path | None:
    """numba's cache directory (``NUMBA_CACHE_DIR``); None when unset or empty."""
    value = os.environ.get("NUMBA_CACHE_DIR", "")
    return Path(value) if value else None


def has_cache(directory: Path) -> bool:
    """Whether numba has cached anything under ``directory`` (an index file, at any depth)."""
    try:
        return directory.is_dir() and any(directory.rglob(f"*{INDEX_SUFFIX}"))
    except OSError:  # unreadable: nothing usable there (and copying into it fails, logged)
        return False


def seed_cache(seed: Path | None, cache_dir: Path | None) -> Seeding:
    """Copy ``seed`` into ``cache_dir`` when the latter holds no cache yet; else change nothing."""
    if cache_dir is None:
        return Seeding(0, "NUMBA_CACHE_DIR is not set: not seeded")
    if has_cache(cache_dir):
        return Seeding(0, "already holds a cache: not seeded")
    if seed is None:
        return Seeding(0, "no seed configured")
    if not has_cache(seed):
        return Seeding(0, f"no seed at {seed}")
    try:
        copied = _copy_tree(seed, cache_dir)
    except OSError as error:
        return Seeding(0, f"seeding from {seed} failed ({error}): numba compiles")
    return Seeding(copied, f"seeded with {copied} files from {seed}")


def _copy_tree(seed: Path, cache_dir: Path) -> int:
    """Copy every file of ``seed`` to the same relative path under ``cache_dir``.

    The data files go first and the index files last, so that an index never names a data file
    that is not there yet (numba tolerates a missing index: it compiles).
    """
    files = sorted(
        (path for path in seed.rglob("*") if path.is_file()),
        key=lambda path: (path.suffix == INDEX_SUFFIX, str(path)),
    )
    for source in files:
        _copy_file(source, cache_dir / source.relative_to(seed))
    return len(files)


def _copy_file(source: Path, target: Path) -> None:
    """Copy the contents only (the copy belongs to this process's user), atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.seed-{os.getpid()}")
    try:
        shutil.copyfile(source, partial)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def describe(warm: WarmUp, seeding: Seeding, cache_dir: Path | None) -> str:
    """The start-up log line: where the kernel came from, how long it took, what seeding did."""
    if not warm.jitted:
        origin = "runs as plain Python (NUMBA_DISABLE_JIT)"
    elif warm.compiled:
        origin = "compiled (not in numba's cache)"
    elif warm.loaded:
        origin = "loaded from numba's cache"
    else:
        origin = "already in memory"
    where = f"NUMBA_CACHE_DIR {cache_dir}" if cache_dir else "numba's default cache"
    return f"solver kernel {origin}: warm-up took {warm.seconds:.2f} s; {where}: {seeding.note}"


def start_kernels(seed: str | None) -> WarmUp:
    """Seed the cache (when empty and a seed is configured), warm up, log one line."""
    cache_dir = cache_dir_from_env()
    seeding = seed_cache(Path(seed) if seed else None, cache_dir)
    warm = warm_up()
    # A seed that was copied but not used does not match this numba, Python or CPU.
    level = logging.WARNING if seeding.copied and warm.compiled else logging.INFO
    log.log(level, describe(warm, seeding, cache_dir))
    return warm


def main(argv: list[str] | None = None) -> int:
    """Seed and warm up as ``elastic-quota run`` does; print the line; 1 if it had to compile."""
    parser = argparse.ArgumentParser(
        prog="python -m elasticquota.numbacache",
        description="Seed NUMBA_CACHE_DIR (when empty) and warm the solver kernel up, as the "
        "operator does at start-up. With NUMBA_CACHE_DIR at an empty directory and no seed, "
        "this compiles the kernel into it: that is how a seed is made.",
    )
    parser.add_argument(
        "--seed",
        help="seed directory (default: $ELASTIC_QUOTA_NUMBA_CACHE_SEED, else none)",
    )
    parser.add_argument(
        "--require-cached",
        action="store_true",
        help="exit 1 unless the kernel was loaded from the cache (not compiled)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    seed = args.seed if args.seed is not None else Settings().numba_cache_seed
    warm = start_kernels(seed)
    return 1 if args.require_cached and (warm.compiled or not warm.loaded) else 0


if __name__ == "__main__":
    sys.exit(main())
