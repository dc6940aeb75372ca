"""The binary cache: versions, manifest checks, the build lock and the build environment."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from eqdev.cluster.binaries import (
    BINARY_NAMES,
    MANIFEST_NAME,
    BuildError,
    build_lock,
    cache_root,
    find_cached,
    load_cached,
    upstream_version,
    write_manifest,
)
from eqdev.cluster.build import ensure_binaries, go_environment, rsync_wrapper

PACKAGES = {"kubernetes": "1.20.5+really1.20.2-1.1", "etcd-server": "3.4.23-4+b4"}


@pytest.mark.parametrize(
    ("debian", "upstream"),
    [
        ("1.20.5+really1.20.2-1.1+deb12u1", "1.20.2"),
        ("1.20.2-1", "1.20.2"),
        ("1:1.28.4+dfsg-2", "1.28.4"),
        ("1.30.0", "1.30.0"),
    ],
)
def test_upstream_version(debian: str, upstream: str) -> None:
    assert upstream_version(debian) == upstream


def test_upstream_version_rejects_garbage() -> None:
    with pytest.raises(BuildError):
        upstream_version("unknown")


def _fake_build(directory: Path, version: str = "1.20.2") -> Path:
    directory.mkdir(parents=True)
    for name in BINARY_NAMES:
        path = directory / name
        path.write_bytes(b"#!/bin/sh\n" + name.encode())
        path.chmod(0o755)
    write_manifest(directory, version, PACKAGES, "kubernetes 1.20.5+really1.20.2-1.1")
    return directory


def test_manifest_round_trip(tmp_path: Path) -> None:
    directory = _fake_build(tmp_path / "k8s-1.20.2")
    binaries = load_cached(directory)
    assert binaries is not None
    assert binaries.kubernetes_version == "1.20.2"
    assert binaries.packages == PACKAGES
    assert binaries.kube_apiserver == directory / "kube-apiserver"
    assert binaries.etcd.is_file()
    manifest = json.loads((directory / MANIFEST_NAME).read_text())
    assert set(manifest["binaries"]) == set(BINARY_NAMES)


def test_incomplete_builds_are_not_used(tmp_path: Path) -> None:
    no_manifest = tmp_path / "a"
    _fake_build(no_manifest)
    (no_manifest / MANIFEST_NAME).unlink()
    assert load_cached(no_manifest) is None

    truncated = _fake_build(tmp_path / "b")
    (truncated / "kube-apiserver").write_bytes(b"short")
    assert load_cached(truncated) is None

    missing = _fake_build(tmp_path / "c")
    (missing / "etcd").unlink()
    assert load_cached(missing) is None

    broken = _fake_build(tmp_path / "d")
    (broken / MANIFEST_NAME).write_text("{not json")
    assert load_cached(broken) is None


def test_find_cached_prefers_the_newest_complete_build(tmp_path: Path) -> None:
    assert find_cached(tmp_path) is None
    _fake_build(tmp_path / "k8s-1.9.0", "1.9.0")
    _fake_build(tmp_path / "k8s-1.20.2", "1.20.2")
    newest_but_broken = _fake_build(tmp_path / "k8s-1.30.0", "1.30.0")
    (newest_but_broken / MANIFEST_NAME).unlink()
    found = find_cached(tmp_path)
    assert found is not None
    assert found.kubernetes_version == "1.20.2"


def test_ensure_binaries_uses_the_cache_without_building(tmp_path: Path) -> None:
    _fake_build(tmp_path / "k8s-1.20.2")
    assert ensure_binaries(tmp_path).directory == tmp_path / "k8s-1.20.2"


def test_cache_root_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "elastic-quota"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path.home() / ".cache" / "elastic-quota"


def test_build_lock_serializes(tmp_path: Path) -> None:
    events: list[str] = []

    def second() -> None:
        with build_lock(tmp_path):
            events.append("second")

    with build_lock(tmp_path):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)
        events.append("first done")
    thread.join(timeout=5)
    assert events == ["first done", "second"]


def test_go_environment_is_offline_and_clean(tmp_path: Path) -> None:
    base = {
        "PATH": "/usr/bin",
        "GOPATH": "/elsewhere",
        "GOFLAGS": "-mod=mod",
        "KUBE_X": "1",
        "A": "b",
    }
    env = go_environment(base, tmp_path, tmp_path / "go", tmp_path / "tools")
    assert env["GO111MODULE"] == "off"
    assert env["GOPROXY"] == "off"
    assert env["CGO_ENABLED"] == "0"
    assert env["GOFLAGS"] == ""
    assert "GOPATH" not in env
    assert "KUBE_X" not in env
    assert env["A"] == "b"
    assert env["PATH"].split(":")[:2] == [str(tmp_path / "tools"), str(tmp_path / "go" / "bin")]
    assert env["HOME"].startswith(str(tmp_path))


def test_rsync_wrapper() -> None:
    script = rsync_wrapper(Path("/r/usr/bin/rsync"), Path("/r/usr/lib/x86_64-linux-gnu"))
    assert script.startswith("#!/bin/sh\n")
    assert 'LD_LIBRARY_PATH="/r/usr/lib/x86_64-linux-gnu" exec "/r/usr/bin/rsync" "$@"' in script
