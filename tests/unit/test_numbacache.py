"""Seeding numba's cache at start-up: what is copied, when nothing is, and the start-up log line.

These tests use fake cache files and a fake warm-up; ``test_numbacache_seeded_start`` runs the
real thing (numba compiling a seed, a second process loading it) in subprocesses.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from elasticquota import numbacache
from elasticquota.kernels.warmup import WarmUp
from elasticquota.numbacache import Seeding, describe, has_cache, seed_cache

LOADED = WarmUp(jitted=True, loaded=1, compiled=0, seconds=0.4)
COMPILED = WarmUp(jitted=True, loaded=0, compiled=1, seconds=9.5)


def make_seed(root: Path) -> Path:
    """A cache as numba lays it out: a directory per source directory, index and data files."""
    kernels = root / "kernels_0123abcd"
    kernels.mkdir(parents=True)
    (kernels / "waterfill._solve_tree_kernel-277.py311.nbi").write_bytes(b"index")
    (kernels / "waterfill._solve_tree_kernel-277.py311.1.nbc").write_bytes(b"object code")
    (kernels / "int128.wide_divmod-79.py311.nbi").write_bytes(b"index 2")
    return root


def files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


def test_an_empty_cache_dir_gets_a_copy_of_the_seed(tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "seed")
    cache = tmp_path / "cache"
    cache.mkdir()
    seeding = seed_cache(seed, cache)
    assert seeding == Seeding(3, f"seeded with 3 files from {seed}")
    assert files(cache) == files(seed)  # and no partial copies left behind


def test_a_missing_cache_dir_is_created(tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "seed")
    assert seed_cache(seed, tmp_path / "new" / "cache").copied == 3
    assert files(tmp_path / "new" / "cache") == files(seed)


def test_index_files_are_copied_after_the_data_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[str] = []
    monkeypatch.setattr(numbacache, "_copy_file", lambda source, _: copied.append(source.suffix))
    seed_cache(make_seed(tmp_path / "seed"), tmp_path / "cache")
    assert copied == [".nbc", ".nbi", ".nbi"]


def test_a_cache_already_there_is_left_alone(tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "seed")
    cache = tmp_path / "cache"
    (cache / "kernels_other").mkdir(parents=True)
    (cache / "kernels_other" / "f-1.py311.nbi").write_bytes(b"mine")
    before = files(cache)
    assert seed_cache(seed, cache) == Seeding(0, "already holds a cache: not seeded")
    assert files(cache) == before


@pytest.mark.parametrize("seed_name", [None, "missing", "empty"])
def test_without_a_seed_nothing_is_copied(tmp_path: Path, seed_name: str | None) -> None:
    (tmp_path / "empty").mkdir()
    seed = tmp_path / seed_name if seed_name else None
    cache = tmp_path / "cache"
    seeding = seed_cache(seed, cache)
    assert seeding.copied == 0
    assert seeding.note == ("no seed configured" if seed is None else f"no seed at {seed}")
    assert not cache.exists()


def test_without_numba_cache_dir_nothing_is_copied(tmp_path: Path) -> None:
    seeding = seed_cache(make_seed(tmp_path / "seed"), None)
    assert seeding == Seeding(0, "NUMBA_CACHE_DIR is not set: not seeded")


def test_a_cache_dir_that_cannot_be_written_is_not_an_error(tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "seed")
    (tmp_path / "a-file").write_text("not a directory")
    seeding = seed_cache(seed, tmp_path / "a-file" / "cache")
    assert seeding.copied == 0
    assert seeding.note.startswith(f"seeding from {seed} failed (")


def test_has_cache_looks_for_index_files_at_any_depth(tmp_path: Path) -> None:
    assert not has_cache(tmp_path / "missing")
    (tmp_path / "kernels_x").mkdir()
    (tmp_path / "kernels_x" / "f.1.nbc").write_bytes(b"")
    assert not has_cache(tmp_path)
    (tmp_path / "kernels_x" / "f.nbi").write_bytes(b"")
    assert has_cache(tmp_path)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("/var/cache/numba", Path("/var/cache/numba")), ("", None), (None, None)],
)
def test_the_cache_dir_is_numbas_variable(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: Path | None
) -> None:
    if value is None:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("NUMBA_CACHE_DIR", value)
    assert numbacache.cache_dir_from_env() == expected


@pytest.mark.parametrize(
    ("warm", "origin"),
    [
        (LOADED, "solver kernel loaded from numba's cache: warm-up took 0.40 s"),
        (COMPILED, "solver kernel compiled (not in numba's cache): warm-up took 9.50 s"),
        (WarmUp(False, 0, 0, 0.01), "solver kernel runs as plain Python (NUMBA_DISABLE_JIT)"),
        (WarmUp(True, 0, 0, 0.0), "solver kernel already in memory"),
    ],
)
def test_the_log_line_says_where_the_kernel_came_from(warm: WarmUp, origin: str) -> None:
    line = describe(warm, Seeding(3, "seeded with 3 files from /seed"), Path("/cache"))
    assert line.startswith(origin)
    assert line.endswith("; NUMBA_CACHE_DIR /cache: seeded with 3 files from /seed")


def start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm: WarmUp, *, seeded: bool = True
) -> None:
    """Point NUMBA_CACHE_DIR at an empty directory and fake the warm-up's outcome."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numbacache, "warm_up", lambda: warm)
    if seeded:
        make_seed(tmp_path / "seed")


def test_start_kernels_seeds_then_logs_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    start(tmp_path, monkeypatch, LOADED)
    with caplog.at_level(logging.INFO, logger="elasticquota.numbacache"):
        assert numbacache.start_kernels(str(tmp_path / "seed")) == LOADED
    [record] = caplog.records
    seeding = Seeding(3, f"seeded with 3 files from {tmp_path / 'seed'}")
    assert record.levelno == logging.INFO
    assert record.getMessage() == describe(LOADED, seeding, tmp_path / "cache")
    assert files(tmp_path / "cache") == files(tmp_path / "seed")


def test_a_seed_copied_but_not_used_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    start(tmp_path, monkeypatch, COMPILED)
    with caplog.at_level(logging.INFO, logger="elasticquota.numbacache"):
        numbacache.start_kernels(str(tmp_path / "seed"))
    assert [record.levelno for record in caplog.records] == [logging.WARNING]


def test_compiling_without_a_seed_is_no_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    start(tmp_path, monkeypatch, COMPILED, seeded=False)
    with caplog.at_level(logging.INFO, logger="elasticquota.numbacache"):
        numbacache.start_kernels(None)
    assert [record.levelno for record in caplog.records] == [logging.INFO]
    assert caplog.records[0].getMessage().endswith(": no seed configured")


@pytest.mark.parametrize(
    ("warm", "args", "status"),
    [
        (LOADED, ["--require-cached"], 0),
        (COMPILED, ["--require-cached"], 1),
        (WarmUp(False, 0, 0, 0.0), ["--require-cached"], 1),
        (COMPILED, [], 0),
    ],
)
def test_the_command_fails_only_when_required_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm: WarmUp, args: list[str], status: int
) -> None:
    start(tmp_path, monkeypatch, warm)
    assert numbacache.main(["--seed", str(tmp_path / "seed"), *args]) == status


def test_the_command_takes_the_seed_from_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start(tmp_path, monkeypatch, LOADED)
    monkeypatch.setenv("ELASTIC_QUOTA_NUMBA_CACHE_SEED", str(tmp_path / "seed"))
    assert numbacache.main([]) == 0
    assert files(tmp_path / "cache") == files(tmp_path / "seed")
