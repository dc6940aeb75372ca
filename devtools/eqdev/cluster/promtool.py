"""``promtool``, Prometheus' rule checker, taken from Debian's ``prometheus`` package.

The chart's alert rules and the dashboard's queries are checked by Prometheus' own parser and rule
evaluator (``promtool check rules`` / ``promtool test rules``). No pinned download is reachable
here, but Debian ships ``promtool`` in its ``prometheus`` package, so :func:`install_promtool`:

1. reads the machine's Debian mirror and sets up a private apt configuration (:mod:`.apt`), the
   same way the control-plane build does (the system's apt state is left alone);
2. ``apt-get download prometheus`` (about 19 MB; no dependency is needed: the binary links libc
   only);
3. extracts nothing but ``./usr/bin/promtool`` from the package's data archive
   (``dpkg-deb --fsys-tarfile``), into the destination directory, atomically;
4. checks that ``promtool --version`` runs, and returns the package version.

The scratch directory (apt lists, the ``.deb``) is deleted afterwards. A failing step raises
:class:`~eqdev.cluster.binaries.BuildError` with the end of its output, as the control-plane build's
steps do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eqdev.cluster.apt import PrivateApt, machine_debian_sources
from eqdev.cluster.binaries import BuildError, say

PACKAGE = "prometheus"
MEMBER = "usr/bin/promtool"
BINARY_NAME = "promtool"
#: apt-get retries a failed download this many times (a flaky mirror must not fail CI).
APT_RETRIES = 3
COMMAND_TIMEOUT_SECONDS = 600.0
OUTPUT_TAIL_LINES = 20


@dataclass(frozen=True)
class InstalledTool:
    """A tool installed from a Debian package."""

    path: Path
    package: str
    package_version: str
    version_line: str
    deb_bytes: int


def _tail(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:]) or "(no output)"


def _run(step: str, argv: Sequence[str], cwd: Path) -> str:
    """Run one command (output captured); :class:`BuildError` if it cannot start or fails."""
    started = time.monotonic()
    try:
        result = subprocess.run(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BuildError(f"{step}: {' '.join(argv)}: {error}") from error
    if result.returncode != 0:
        raise BuildError(
            f"{step} failed (exit {result.returncode}): {' '.join(argv)}\n"
            f"--- last lines of its output ---\n{_tail(result.stdout + result.stderr)}"
        )
    say(f"{step}: done in {time.monotonic() - started:.1f} s")
    return result.stdout


def deb_fields(deb: Path, *names: str) -> dict[str, str]:
    """Control fields of a ``.deb`` (``Package``, ``Version``...)."""
    argv = ["dpkg-deb", "--field", str(deb), *names]
    output = _run(f"reading {deb.name}", argv, deb.parent)
    pairs = (line.split(": ", 1) for line in output.splitlines() if ": " in line)
    return {key: value for key, value in pairs}


def extract_member(deb: Path, member: str, target: Path) -> None:
    """Write the regular file ``member`` of ``deb``'s data archive to ``target`` (mode kept).

    Streams ``dpkg-deb --fsys-tarfile`` through :mod:`tarfile`: nothing else of the package is
    written. ``target`` appears complete or not at all (written beside it, then renamed).
    """
    name = member.removeprefix("./")
    wanted = {name, "./" + name}
    argv = ["dpkg-deb", "--fsys-tarfile", str(deb)]
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    target.parent.mkdir(parents=True, exist_ok=True)
    found = False
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            with tarfile.open(fileobj=process.stdout, mode="r|") as archive:
                for entry in archive:
                    if entry.name not in wanted:
                        continue
                    source = archive.extractfile(entry) if entry.isfile() else None
                    if source is None:
                        raise BuildError(f"{member} in {deb.name} is not a regular file")
                    with source, partial.open("wb") as sink:
                        shutil.copyfileobj(source, sink)
                    partial.chmod((entry.mode & 0o7777) | 0o100)
                    found = True
                    break
        except tarfile.TarError as error:
            partial.unlink(missing_ok=True)
            raise BuildError(f"cannot read the data archive of {deb.name}: {error}") from error
        finally:
            process.stdout.close()  # stops dpkg-deb early once the member is out
        errors = process.stderr.read().decode(errors="replace")
        returncode = process.wait()
    if not found:
        partial.unlink(missing_ok=True)
        detail = f" (dpkg-deb exit {returncode}: {_tail(errors)})" if returncode else ""
        raise BuildError(f"{deb.name} has no {member}{detail}")
    partial.replace(target)


def install_promtool(destination: Path) -> InstalledTool:
    """Download Debian's ``prometheus`` package, install its ``promtool`` in ``destination``."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="elastic-quota-promtool-"))
    try:
        try:
            sources = machine_debian_sources()
        except RuntimeError as error:
            raise BuildError(str(error)) from error
        apt = PrivateApt(work / "apt", sources)
        apt.write()
        say("private apt sources: " + ", ".join(f"{s.uri} {' '.join(s.suites)}" for s in sources))
        retries = ("-o", f"Acquire::Retries={APT_RETRIES}")
        _run("apt-get update (private lists)", apt.command(*retries, "update"), work)
        debs = work / "debs"
        debs.mkdir()
        _run(f"apt-get download {PACKAGE}", apt.command(*retries, "download", PACKAGE), debs)
        found = sorted(debs.glob(f"{PACKAGE}_*.deb"))
        if not found:
            raise BuildError(f"apt-get download {PACKAGE} fetched no {PACKAGE}_*.deb")
        deb = found[-1]
        fields = deb_fields(deb, "Package", "Version")
        if fields.get("Package") != PACKAGE or "Version" not in fields:
            raise BuildError(f"{deb.name} is not a {PACKAGE} package: {fields}")
        target = destination.resolve() / BINARY_NAME
        extract_member(deb, MEMBER, target)
        say(f"extracted {MEMBER} of {deb.name} to {target}")
        version = _run(f"{BINARY_NAME} --version", [str(target), "--version"], work)
        installed = InstalledTool(
            path=target,
            package=PACKAGE,
            package_version=fields["Version"],
            version_line=(version.splitlines() or ["?"])[0],
            deb_bytes=deb.stat().st_size,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(
        f"{installed.path}: {installed.version_line} (Debian {PACKAGE} "
        f"{installed.package_version}, {installed.deb_bytes / 1e6:.1f} MB .deb) "
        f"in {time.monotonic() - started:.1f} s"
    )
    return installed
