"""kube-apiserver, kube-controller-manager and etcd, built offline from Debian packages; cached.

No reachable registry ships Kubernetes control-plane binaries, but Debian's ``kubernetes`` source
package carries the full upstream tree with ``vendor/`` and Debian ships Go 1.19 and etcd 3.4. So
:func:`ensure_binaries` returns the binaries from ``~/.cache/elastic-quota/k8s-<version>/`` when a
complete build is there (no network needed), and otherwise:

1. reads the machine's Debian mirror and sets up a private apt configuration (:mod:`.apt`);
2. downloads Go, etcd, rsync (+ libpopt) and reflect2 1.0.2 and unpacks them with ``dpkg -x``;
3. downloads the ``kubernetes`` source package and untars its upstream tarball;
4. replaces the vendored ``modern-go/reflect2`` 1.0.1 by Debian's 1.0.2 (required: with Go >= 1.18
   the old one crashes the apiserver on the first custom-object POST);
5. runs the upstream ``make`` in GOPATH mode with ``GOPROXY=off``;
6. copies the three binaries and a manifest of the Debian package versions into the cache, then
   deletes the build tree (about 2 GB).

A lock file serializes concurrent builds (the second one then finds the cache filled), progress
goes to stderr, and a failing step raises :class:`BuildError` with the end of its output. The
cache itself (what a complete build holds, the lock) is :mod:`.binaries`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from eqdev.cluster.apt import PrivateApt, machine_debian_sources
from eqdev.cluster.binaries import (
    Binaries,
    BuildError,
    build_lock,
    cache_root,
    find_cached,
    load_cached,
    say,
    upstream_version,
    write_manifest,
)
from eqdev.processes import log_tail, stop

SOURCE_PACKAGE = "kubernetes"
TOOL_PACKAGES = (
    "golang-1.19-go",
    "golang-1.19-src",
    "etcd-server",
    "rsync",
    "libpopt0",
    "golang-github-modern-go-reflect2-dev",
)
GOROOT_IN_PACKAGE = Path("usr/lib/go-1.19")
REFLECT2_IN_PACKAGE = Path("usr/share/gocode/src/github.com/modern-go/reflect2")
REFLECT2_VENDORED = Path("vendor/github.com/modern-go/reflect2")
MAKE_TARGETS = ("cmd/kube-apiserver", "cmd/kube-controller-manager")
MIN_FREE_BYTES = 3 * 1024**3
HEARTBEAT_SECONDS = 30.0
LOG_TAIL_LINES = 40


def ensure_binaries(cache: Path | None = None) -> Binaries:
    """Cached binaries, building them first (3-5 minutes, ~2.2 GB of scratch disk) if needed."""
    root = cache if cache is not None else cache_root()
    cached = find_cached(root)
    if cached is not None:
        return cached
    with build_lock(root):
        cached = find_cached(root)  # a concurrent build may have finished meanwhile
        if cached is not None:
            return cached
        return _build_into(root)


# ---------------------------------------------------------------------------------------------
# Build


def _build_into(root: Path) -> Binaries:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="elastic-quota-k8s-build-"))
    builder = _Builder(work)
    say(f"no cached control plane under {root}; building it in {work} (3-5 minutes)")
    try:
        binaries = builder.build(root)
    except BaseException:
        _keep_log(builder.log_path, root / "last-build-failure.log")
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"built Kubernetes {binaries.kubernetes_version} in {time.monotonic() - started:.0f} s")
    say(f"cached in {binaries.directory}; build tree removed")
    return binaries


def _keep_log(log: Path, destination: Path) -> None:
    with contextlib.suppress(OSError):
        if log.is_file():
            shutil.copyfile(log, destination)
            say(f"build log kept in {destination}")


def go_environment(
    base: Mapping[str, str], work: Path, goroot: Path, tools: Path
) -> dict[str, str]:
    """The environment of the upstream ``make``: offline GOPATH mode with the unpacked Go."""
    env = {k: v for k, v in base.items() if not k.startswith(("GO", "KUBE_", "CGO_"))}
    env.update(
        GOROOT=str(goroot),
        GO111MODULE="off",
        GOPROXY="off",
        GOFLAGS="",
        CGO_ENABLED="0",
        GOCACHE=str(work / "gocache"),
        GOTMPDIR=str(work / "gotmp"),
        HOME=str(work / "home"),
        PATH=os.pathsep.join((str(tools), str(goroot / "bin"), base.get("PATH", "/usr/bin:/bin"))),
    )
    return env


def rsync_wrapper(rsync: Path, library_dir: Path) -> str:
    """A shell script running the unpacked rsync with its unpacked libpopt."""
    return f'#!/bin/sh\nLD_LIBRARY_PATH="{library_dir}" exec "{rsync}" "$@"\n'


class _Builder:
    """The steps of one build inside a scratch directory; every command's output goes to a log."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.log_path = work / "build.log"
        self.debs = work / "debs"
        self.sysroot = work / "root"
        self.src = work / "src"
        self.tools = work / "tools"

    def build(self, root: Path) -> Binaries:
        self._check_disk()
        apt = self._private_apt()
        self.run("apt-get update (private lists)", apt.update(), cwd=self.work)
        self.run("downloading Go, etcd, rsync, reflect2", apt.download(TOOL_PACKAGES), self.debs)
        self.run(
            "downloading the kubernetes source package",
            apt.download_source(SOURCE_PACKAGE),
            self.src,
        )
        packages = self._unpack_debs()
        source_version = self._source_version()
        version = upstream_version(source_version)
        packages[SOURCE_PACKAGE] = source_version
        tree = self._unpack_source()
        self._replace_reflect2(tree)
        self._make(tree, version)
        return self._install(root, tree, version, packages, source_version)

    # -- running commands

    def run(
        self,
        step: str,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None = None,
        *,
        announce: bool = True,
    ) -> None:
        """Run one command, its output appended to the log; :class:`BuildError` if it fails."""
        if announce:
            say(f"{step} ...")
        cwd.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log_path.open("a") as log:
            log.write(f"\n$ {' '.join(argv)}\n")
            log.flush()
            returncode = self._wait(step, argv, cwd, env, log, started)
        if returncode != 0:
            raise BuildError(
                f"build step '{step}' failed (exit {returncode}): {' '.join(argv)}\n"
                f"--- last lines of its output ---\n{log_tail(self.log_path, LOG_TAIL_LINES)}"
            )
        if announce:
            say(f"{step}: done in {time.monotonic() - started:.1f} s")

    def _wait(
        self,
        step: str,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None,
        log: IO[str],
        started: float,
    ) -> int:
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except OSError as error:
            raise BuildError(f"build step '{step}' could not start {argv[0]}: {error}") from error
        try:
            while True:
                try:
                    return process.wait(timeout=HEARTBEAT_SECONDS)
                except subprocess.TimeoutExpired:
                    say(f"{step}: still running ({time.monotonic() - started:.0f} s)")
        finally:
            if process.poll() is None:  # interrupted: do not leave a compiler running
                stop(process, grace=10)

    # -- steps

    def _check_disk(self) -> None:
        free = shutil.disk_usage(self.work).free
        if free < MIN_FREE_BYTES:
            raise BuildError(
                f"the build needs about {MIN_FREE_BYTES / 1024**3:.0f} GB of scratch space in "
                f"{self.work.parent}, only {free / 1024**3:.1f} GB are free (set TMPDIR elsewhere)"
            )

    def _private_apt(self) -> PrivateApt:
        try:
            sources = machine_debian_sources()
        except RuntimeError as error:
            raise BuildError(str(error)) from error
        apt = PrivateApt(self.work / "apt", sources)
        apt.write()
        say("private apt sources: " + ", ".join(f"{s.uri} {' '.join(s.suites)}" for s in sources))
        return apt

    def _unpack_debs(self) -> dict[str, str]:
        say("unpacking the .deb files ...")
        started = time.monotonic()
        versions: dict[str, str] = {}
        for deb in sorted(self.debs.glob("*.deb")):
            fields = subprocess.run(
                ["dpkg-deb", "--field", str(deb), "Package", "Version"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            info = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
            versions[info["Package"]] = info["Version"]
            argv = ["dpkg", "-x", str(deb), str(self.sysroot)]
            self.run(f"dpkg -x {deb.name}", argv, self.work, announce=False)
        say(f"unpacking the .deb files: done in {time.monotonic() - started:.1f} s")
        missing = sorted(set(TOOL_PACKAGES) - versions.keys())
        if missing:
            raise BuildError(f"apt-get download did not fetch: {', '.join(missing)}")
        return versions

    def _source_version(self) -> str:
        dscs = sorted(self.src.glob(f"{SOURCE_PACKAGE}_*.dsc"))
        if not dscs:
            raise BuildError(f"no {SOURCE_PACKAGE}_*.dsc was downloaded into {self.src}")
        for line in dscs[-1].read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
        raise BuildError(f"{dscs[-1].name} has no Version field")

    def _unpack_source(self) -> Path:
        tarballs = sorted(self.src.glob(f"{SOURCE_PACKAGE}_*.orig.tar.*"))
        if not tarballs:
            raise BuildError(f"no upstream tarball ({SOURCE_PACKAGE}_*.orig.tar.*) was downloaded")
        unpacked = self.src / "tree"
        unpacked.mkdir()
        self.run(f"untar {tarballs[0].name}", ["tar", "-xf", str(tarballs[0])], unpacked)
        for candidate in (unpacked, *sorted(p for p in unpacked.iterdir() if p.is_dir())):
            if (candidate / "Makefile").is_file() and (candidate / "vendor").is_dir():
                return candidate
        raise BuildError(f"{tarballs[0].name} has no Kubernetes tree with Makefile and vendor/")

    def _replace_reflect2(self, tree: Path) -> None:
        vendored = tree / REFLECT2_VENDORED
        debian = self.sysroot / REFLECT2_IN_PACKAGE
        if not vendored.is_dir() or not (debian / "reflect2.go").is_file():
            raise BuildError(f"cannot apply the reflect2 fix: {vendored} or {debian} is missing")
        shutil.rmtree(vendored)
        shutil.copytree(debian, vendored, symlinks=False)
        say("vendored modern-go/reflect2 replaced by Debian's 1.0.2 (Go >= 1.18 fix)")

    def _make(self, tree: Path, version: str) -> None:
        goroot = self.sysroot / GOROOT_IN_PACKAGE
        self.tools.mkdir(parents=True, exist_ok=True)
        wrapper = self.tools / "rsync"
        library_dir = self.sysroot / "usr/lib" / _multiarch_dir(self.sysroot)
        wrapper.write_text(rsync_wrapper(self.sysroot / "usr/bin/rsync", library_dir))
        wrapper.chmod(0o755)
        (self.work / "home").mkdir(exist_ok=True)
        (self.work / "gotmp").mkdir(exist_ok=True)
        argv = [
            "make",
            f"WHAT={' '.join(MAKE_TARGETS)}",
            f"KUBE_GIT_VERSION=v{version}",
            "KUBE_GIT_TREE_STATE=clean",
        ]
        env = go_environment(os.environ, self.work, goroot, self.tools)
        step = "compiling kube-apiserver and kube-controller-manager (a few minutes)"
        self.run(step, argv, tree, env)

    def _install(
        self,
        root: Path,
        tree: Path,
        version: str,
        packages: Mapping[str, str],
        source_version: str,
    ) -> Binaries:
        built = {
            "kube-apiserver": _find_output(tree, "kube-apiserver"),
            "kube-controller-manager": _find_output(tree, "kube-controller-manager"),
            "etcd": self.sysroot / "usr/bin/etcd",
        }
        final = root / f"k8s-{version}"
        staging = root / f".k8s-{version}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, path in built.items():
            if not path.is_file():
                raise BuildError(f"the build produced no {name} (looked for {path})")
            shutil.copy2(path, staging / name)
            (staging / name).chmod(0o755)
        write_manifest(staging, version, packages, f"{SOURCE_PACKAGE} {source_version}")
        shutil.rmtree(final, ignore_errors=True)  # an incomplete earlier attempt
        staging.rename(final)
        binaries = load_cached(final)
        if binaries is None:
            raise BuildError(f"the cache in {final} does not verify after installing it")
        return binaries


def _multiarch_dir(sysroot: Path) -> str:
    """``x86_64-linux-gnu`` or whichever multiarch directory libpopt was unpacked into."""
    for library in sorted((sysroot / "usr/lib").glob("*/libpopt.so*")):
        return library.parent.name
    raise BuildError("libpopt was not unpacked (rsync needs it)")


def _find_output(tree: Path, name: str) -> Path:
    matches = sorted(tree.glob(f"_output/local/bin/*/*/{name}"))
    return matches[0] if matches else tree / "_output/local/bin" / name
