"""A private apt configuration built from the Debian mirror already configured on the machine.

The control-plane build needs a few Debian packages (Go, etcd, the ``kubernetes`` source package)
but must neither change the system's apt setup nor name a package registry in the repository. So
the mirror URIs and suites are read from ``/etc/apt/sources.list.d/*.sources`` (deb822) or
``/etc/apt/sources.list`` (one-line format), and written, with matching ``deb-src`` lines, into a
sources list of our own. The apt configuration file points every list, cache and state directory
into a private root, and the source and preference parts at empty private directories (instead of
``/nonexistent``, which apt warns about); ``apt-get -c <file>`` then reads it
after the system configuration (proxy or snapshot settings there still apply).

Parsing and rendering are pure functions (unit-tested); :class:`PrivateApt` only writes files and
returns ``apt-get`` command lines for the caller to run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ETC_APT = Path("/etc/apt")
OS_RELEASE = Path("/etc/os-release")


class AptSourceError(RuntimeError):
    """No usable Debian mirror is configured on the machine."""


@dataclass(frozen=True)
class AptSource:
    """One repository as configured: a mirror URI, its suites and components."""

    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]
    signed_by: str | None = None


# ---------------------------------------------------------------------------------------------
# Parsing


def _deb822_stanzas(text: str) -> list[dict[str, str]]:
    """Split deb822 text into stanzas of ``field -> value`` (continuation lines joined)."""
    stanzas: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    last: str | None = None
    for raw in [*text.splitlines(), ""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if fields:
                stanzas.append(fields)
            fields, last = {}, None
        elif raw[0] in " \t":
            if last is not None:
                fields[last] += "\n" + raw.strip()
        elif ":" in raw:
            key, _, value = raw.partition(":")
            last = key.strip().lower()
            fields[last] = value.strip()
    return stanzas


def _signed_by_path(value: str | None) -> str | None:
    """Keep a ``Signed-By`` that names a key file; an inline key block cannot be carried over."""
    if value and value.startswith("/") and "\n" not in value and " " not in value:
        return value
    return None


def parse_deb822(text: str) -> list[AptSource]:
    """The enabled binary (``deb``) repositories of a deb822 ``.sources`` file."""
    sources: list[AptSource] = []
    for stanza in _deb822_stanzas(text):
        if "deb" not in stanza.get("types", "").split():
            continue
        if stanza.get("enabled", "yes").strip().lower() == "no":
            continue
        suites = tuple(stanza.get("suites", "").split())
        components = tuple(stanza.get("components", "").split())
        signed_by = _signed_by_path(stanza.get("signed-by"))
        sources.extend(
            AptSource(uri, suites, components, signed_by)
            for uri in stanza.get("uris", "").split()
            if suites
        )
    return sources


_ONE_LINE = re.compile(r"^(?P<type>deb|deb-src)\s+(?:\[(?P<options>[^\]]*)\]\s+)?(?P<rest>.+)$")


def _one_line_options(options: str | None) -> dict[str, str]:
    pairs = (item.partition("=") for item in (options or "").split())
    return {key: value for key, _, value in pairs}


def parse_one_line(text: str) -> list[AptSource]:
    """The ``deb`` lines of a one-line-style ``sources.list`` (one suite per line)."""
    sources: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _ONE_LINE.match(line)
        if match is None or match["type"] != "deb":
            continue
        words = match["rest"].split()
        if len(words) < 2:
            continue
        signed_by = _signed_by_path(_one_line_options(match["options"]).get("signed-by"))
        sources.append(AptSource(words[0], (words[1],), tuple(words[2:]), signed_by))
    return sources


def read_system_sources(etc_apt: Path = ETC_APT) -> list[AptSource]:
    """Every ``deb`` repository configured under ``etc_apt`` (both formats)."""
    sources: list[AptSource] = []
    one_line = etc_apt / "sources.list"
    if one_line.is_file():
        sources += parse_one_line(one_line.read_text(encoding="utf-8", errors="replace"))
    parts = etc_apt / "sources.list.d"
    for path in sorted(parts.glob("*.list")) if parts.is_dir() else ():
        sources += parse_one_line(path.read_text(encoding="utf-8", errors="replace"))
    for path in sorted(parts.glob("*.sources")) if parts.is_dir() else ():
        sources += parse_deb822(path.read_text(encoding="utf-8", errors="replace"))
    return sources


def os_codename(os_release: Path = OS_RELEASE) -> str | None:
    """``VERSION_CODENAME`` of the running distribution (``bookworm``), if known."""
    if not os_release.is_file():
        return None
    for line in os_release.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "VERSION_CODENAME":
            return value.strip().strip("\"'") or None
    return None


def debian_sources(sources: Iterable[AptSource], codename: str) -> list[AptSource]:
    """The repositories that serve the distribution's own suites (``bookworm``, ``bookworm-*``).

    Third-party repositories (their own suite names, often no source index) are left out, so
    that a missing ``Sources`` file there cannot fail the private ``apt-get update``.
    """
    kept: list[AptSource] = []
    for source in sources:
        suites = tuple(s for s in source.suites if s == codename or s.startswith(codename + "-"))
        if suites and source.components:
            kept.append(AptSource(source.uri, suites, source.components, source.signed_by))
    return kept


def machine_debian_sources(
    etc_apt: Path = ETC_APT, os_release: Path = OS_RELEASE
) -> list[AptSource]:
    """The machine's Debian mirror(s), or :class:`AptSourceError` saying what was looked at."""
    codename = os_codename(os_release)
    if codename is None:
        raise AptSourceError(f"cannot tell the Debian release: no VERSION_CODENAME in {os_release}")
    sources = debian_sources(read_system_sources(etc_apt), codename)
    if not sources:
        raise AptSourceError(
            f"no Debian mirror for {codename!r} is configured in {etc_apt}/sources.list "
            f"or {etc_apt}/sources.list.d/*.sources"
        )
    return sources


# ---------------------------------------------------------------------------------------------
# Rendering


def render_sources_list(sources: Sequence[AptSource]) -> str:
    """One-line ``deb`` and ``deb-src`` entries for every repository and suite."""
    lines: list[str] = []
    for source in sources:
        options = f"[signed-by={source.signed_by}] " if source.signed_by else ""
        for suite in source.suites:
            tail = " ".join((source.uri, suite, *source.components))
            lines.append(f"deb {options}{tail}")
            lines.append(f"deb-src {options}{tail}")
    return "\n".join(lines) + "\n"


def render_apt_conf(root: Path, *, sandbox_user: str | None) -> str:
    """An apt configuration whose lists, caches, state and preferences all live under ``root``."""
    entries = [
        ("Dir::Etc::SourceList", root / "sources.list"),
        ("Dir::Etc::SourceParts", root / "sources.list.d"),
        ("Dir::Etc::Preferences", root / "preferences"),
        ("Dir::Etc::PreferencesParts", root / "preferences.d"),
        ("Dir::State", root / "state"),
        ("Dir::State::Lists", root / "state" / "lists"),
        ("Dir::State::status", root / "state" / "status"),
        ("Dir::Cache", root / "cache"),
        ("Dir::Cache::Archives", root / "cache" / "archives"),
        ("Acquire::Languages", "none"),
    ]
    if sandbox_user is not None:
        entries.append(("APT::Sandbox::User", sandbox_user))
    lines = [f'{key} "{value}";' for key, value in entries]
    # The system's post-update hooks (e.g. PackageKit notifications) concern the system's lists.
    lines.append("#clear APT::Update::Post-Invoke-Success;")
    lines.append("#clear APT::Update::Post-Invoke;")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Files and commands


class PrivateApt:
    """A private apt root: writes its configuration once, then builds ``apt-get`` command lines."""

    def __init__(self, root: Path, sources: Sequence[AptSource]) -> None:
        self.root = root
        self.sources = tuple(sources)
        self.conf = root / "apt.conf"

    def write(self) -> None:
        """Create the directories, the sources list and the configuration file."""
        for sub in (
            "state/lists/partial",
            "cache/archives/partial",
            "sources.list.d",
            "preferences.d",
        ):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "state" / "status").touch()
        (self.root / "sources.list").write_text(render_sources_list(self.sources))
        sandbox = "root" if os.geteuid() == 0 else None
        self.conf.write_text(render_apt_conf(self.root, sandbox_user=sandbox))

    def command(self, *args: str) -> list[str]:
        """``apt-get`` with this configuration (non-interactive, quiet progress)."""
        return ["apt-get", "-c", str(self.conf), "-q", "-y", *args]

    def update(self) -> list[str]:
        return self.command("update")

    def download(self, packages: Iterable[str]) -> list[str]:
        """Download ``.deb`` files into the working directory of the command."""
        return self.command("download", *packages)

    def download_source(self, package: str) -> list[str]:
        """Download a source package (``.dsc`` and tarballs) into the working directory."""
        return self.command("source", "--download-only", package)
