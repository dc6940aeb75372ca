"""The cache of built control-plane binaries: where it is, what a complete build holds.

A build (``eqdev.cluster.build``) goes into ``~/.cache/elastic-quota/k8s-<version>/`` with a
manifest of the Debian package versions and the binaries' sizes, written last: a directory is a
complete build when its manifest reads and every binary matches it (``load_cached``);
``find_cached`` takes the newest such one. ``build_lock`` serializes concurrent builds, ``say``
writes the progress lines, and ``BuildError`` is what any failed step raises.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BINARY_NAMES = ("kube-apiserver", "kube-controller-manager", "etcd")
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1


class BuildError(RuntimeError):
    """A build step failed; the message names the step and ends with its last output lines."""


@dataclass(frozen=True)
class Binaries:
    """A complete set of cached control-plane binaries and where they came from."""

    directory: Path
    kubernetes_version: str
    packages: Mapping[str, str] = field(default_factory=dict)

    @property
    def kube_apiserver(self) -> Path:
        return self.directory / "kube-apiserver"

    @property
    def kube_controller_manager(self) -> Path:
        return self.directory / "kube-controller-manager"

    @property
    def etcd(self) -> Path:
        return self.directory / "etcd"


def say(message: str) -> None:
    """A progress line on stderr."""
    print(f"[devcluster] {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/elastic-quota`` (``~/.cache/elastic-quota`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "elastic-quota"


def upstream_version(debian_version: str) -> str:
    """The upstream Kubernetes version of a Debian version: ``1.20.5+really1.20.2-1`` -> ``1.20.2``.

    Drops the epoch and the Debian revision, and follows Debian's ``+really`` convention (the
    package claims a higher version than the code it actually ships).
    """
    version = debian_version.split(":", 1)[-1]
    if "-" in version:
        version = version.rsplit("-", 1)[0]
    version = version.rsplit("really", 1)[-1]
    match = re.match(r"\d+(?:\.\d+)*", version)
    if match is None:
        raise BuildError(f"cannot read an upstream version from {debian_version!r}")
    return match.group(0)


def _version_key(directory: Path) -> tuple[int, ...]:
    digits = directory.name.removeprefix("k8s-").split(".")
    return tuple(int(d) for d in digits if d.isdigit())


def load_cached(directory: Path) -> Binaries | None:
    """The binaries in ``directory`` if its manifest is readable and every file matches it."""
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text())
        sizes: dict[str, int] = manifest["binaries"]
        version = str(manifest["kubernetes_version"])
        packages = {str(k): str(v) for k, v in manifest["packages"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    for name in BINARY_NAMES:
        path = directory / name
        if not (path.is_file() and os.access(path, os.X_OK)):
            return None
        if path.stat().st_size != sizes.get(name):
            return None
    return Binaries(directory, version, packages)


def find_cached(root: Path) -> Binaries | None:
    """The newest complete ``k8s-<version>`` build under ``root``, if any."""
    candidates = sorted(root.glob("k8s-*"), key=_version_key, reverse=True)
    for directory in candidates:
        binaries = load_cached(directory) if directory.is_dir() else None
        if binaries is not None:
            return binaries
    return None


def write_manifest(directory: Path, version: str, packages: Mapping[str, str], source: str) -> None:
    """Record versions and binary sizes; written last, so its presence marks a complete build."""
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "kubernetes_version": version,
        "debian_source": source,
        "packages": dict(packages),
        "binaries": {name: (directory / name).stat().st_size for name in BINARY_NAMES},
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (directory / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def build_lock(root: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``root/build.lock`` (waits, saying so, if another build runs)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "build.lock"
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another build holds {path}; waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
