"""Installing promtool from a Debian package: field reading, single-member extraction, the flow.

The packages are built here with ``dpkg-deb --build`` and apt is replaced by a copy of that
package: nothing is downloaded.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from eqdev.cluster import promtool as module
from eqdev.cluster.apt import AptSource, AptSourceError, PrivateApt
from eqdev.cluster.promtool import (
    MEMBER,
    BuildError,
    deb_fields,
    extract_member,
    install_promtool,
)

FAKE_PROMTOOL = "#!/bin/sh\necho 'promtool, version 2.42.0+ds (fake)'\n"


def build_deb(directory: Path, package: str, files: dict[str, str]) -> Path:
    """A minimal binary package holding ``files`` (path inside the package -> text)."""
    root = directory / f"{package}-root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package}\nVersion: 2.42.0+ds-5\nArchitecture: all\n"
        "Maintainer: Nobody <nobody@invalid>\nDescription: test package\n"
    )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    deb = directory / f"{package}_2.42.0+ds-5_all.deb"
    argv = ["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)]
    subprocess.run(argv, check=True, capture_output=True)
    return deb


@pytest.fixture
def prometheus_deb(tmp_path: Path) -> Path:
    files = {MEMBER: FAKE_PROMTOOL, "usr/bin/prometheus": "#!/bin/sh\n", "etc/x.yml": "a: 1\n"}
    return build_deb(tmp_path / "debs", "prometheus", files)


def test_deb_fields(prometheus_deb: Path) -> None:
    fields = deb_fields(prometheus_deb, "Package", "Version")
    assert fields == {"Package": "prometheus", "Version": "2.42.0+ds-5"}


def test_extract_member_writes_only_that_file(prometheus_deb: Path, tmp_path: Path) -> None:
    target = tmp_path / "tools" / "bin" / "promtool"
    extract_member(prometheus_deb, MEMBER, target)
    assert target.read_text() == FAKE_PROMTOOL
    assert target.stat().st_mode & stat.S_IXUSR
    assert sorted(p.name for p in (tmp_path / "tools").rglob("*")) == ["bin", "promtool"]
    extract_member(prometheus_deb, "./" + MEMBER, target)  # both spellings, overwriting
    assert target.read_text() == FAKE_PROMTOOL


def test_extract_member_missing(tmp_path: Path) -> None:
    deb = build_deb(tmp_path, "prometheus", {"usr/bin/prometheus": "#!/bin/sh\n"})
    target = tmp_path / "bin" / "promtool"
    with pytest.raises(BuildError, match="has no usr/bin/promtool"):
        extract_member(deb, MEMBER, target)
    assert list(target.parent.iterdir()) == []


def test_install_promtool_through_private_apt(
    prometheus_deb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = AptSource("http://mirror.invalid/debian", ("bookworm",), ("main",))
    monkeypatch.setattr(module, "machine_debian_sources", lambda: [mirror])
    calls: list[tuple[str, ...]] = []

    def command(self: PrivateApt, *args: str) -> list[str]:
        calls.append(args)
        assert self.conf.is_file() and "mirror.invalid" in (self.root / "sources.list").read_text()
        if "download" in args:
            return ["cp", str(prometheus_deb), "."]
        return ["true"]

    monkeypatch.setattr(PrivateApt, "command", command)
    installed = install_promtool(tmp_path / "bin")
    assert installed.path == (tmp_path / "bin" / "promtool").resolve()
    assert installed.package_version == "2.42.0+ds-5"
    assert installed.version_line == "promtool, version 2.42.0+ds (fake)"
    assert [args[-1] for args in calls] == ["update", "prometheus"]
    assert all("Acquire::Retries=3" in args for args in calls)


def test_install_promtool_without_a_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_mirror() -> list[AptSource]:
        raise AptSourceError("no Debian mirror for 'bookworm' is configured")

    monkeypatch.setattr(module, "machine_debian_sources", no_mirror)
    with pytest.raises(BuildError, match="no Debian mirror"):
        install_promtool(tmp_path / "bin")
    assert not (tmp_path / "bin").exists()


def test_install_promtool_reports_a_failing_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = AptSource("http://mirror.invalid/debian", ("bookworm",), ("main",))
    monkeypatch.setattr(module, "machine_debian_sources", lambda: [mirror])

    def command(self: PrivateApt, *args: str) -> list[str]:
        if "download" in args:
            return ["sh", "-c", "echo 'E: Unable to locate package prometheus' >&2; exit 100"]
        return ["true"]

    monkeypatch.setattr(PrivateApt, "command", command)
    with pytest.raises(BuildError, match=r"(?s)exit 100.*Unable to locate package prometheus"):
        install_promtool(tmp_path / "bin")
