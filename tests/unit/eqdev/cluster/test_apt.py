"""Reading the machine's apt sources and writing a private apt configuration (pure parts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqdev.cluster.apt import (
    AptSource,
    AptSourceError,
    PrivateApt,
    debian_sources,
    machine_debian_sources,
    os_codename,
    parse_deb822,
    parse_one_line,
    read_system_sources,
    render_apt_conf,
    render_sources_list,
)

MIRROR = "http://mirror.example/debian"
SECURITY = "http://mirror.example/debian-security"
KEYRING = "/usr/share/keyrings/example-archive-keyring.gpg"

DEB822 = f"""\
Types: deb
# a comment between fields
URIs: {MIRROR}
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: {KEYRING}

Types: deb deb-src
URIs: {SECURITY}
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://mirror.example/sources-only
Suites: bookworm
Components: main

Types: deb
Enabled: no
URIs: http://mirror.example/disabled
Suites: bookworm
Components: main
"""


def test_deb822_keeps_enabled_binary_repositories() -> None:
    assert parse_deb822(DEB822) == [
        AptSource(MIRROR, ("bookworm", "bookworm-updates"), ("main", "contrib"), KEYRING),
        AptSource(SECURITY, ("bookworm-security",), ("main",), None),
    ]


def test_deb822_several_uris_and_inline_key() -> None:
    text = (
        "Types: deb\n"
        "URIs: http://a.example/debian http://b.example/debian\n"
        "Suites: bookworm\n"
        "Components: main\n"
        "Signed-By:\n"
        " -----BEGIN PGP PUBLIC KEY BLOCK-----\n"
        " .\n"
        " -----END PGP PUBLIC KEY BLOCK-----\n"
    )
    sources = parse_deb822(text)
    assert [s.uri for s in sources] == ["http://a.example/debian", "http://b.example/debian"]
    assert all(s.signed_by is None for s in sources)  # an inline key cannot be carried over


def test_deb822_field_names_are_case_insensitive() -> None:
    text = f"types: deb\nuris: {MIRROR}\nsuites: bookworm\ncomponents: main\n"
    assert parse_deb822(text) == [AptSource(MIRROR, ("bookworm",), ("main",))]


def test_one_line_format() -> None:
    text = f"""\
# deb http://mirror.example/commented bookworm main
deb {MIRROR} bookworm main contrib  # trailing comment
deb [arch=amd64 signed-by={KEYRING}] {SECURITY} bookworm-security main
deb-src {MIRROR} bookworm main
deb http://mirror.example/flat ./
deb
"""
    assert parse_one_line(text) == [
        AptSource(MIRROR, ("bookworm",), ("main", "contrib")),
        AptSource(SECURITY, ("bookworm-security",), ("main",), KEYRING),
        AptSource("http://mirror.example/flat", ("./",), ()),
    ]


def test_read_system_sources_reads_both_formats(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(f"deb {MIRROR} bookworm main\n")
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "debian.sources").write_text(DEB822)
    (parts / "extra.list").write_text("deb http://mirror.example/extra nodistro main\n")
    (parts / "ignored.txt").write_text(f"deb {MIRROR} ignored main\n")
    uris = [s.uri for s in read_system_sources(tmp_path)]
    assert uris == [MIRROR, "http://mirror.example/extra", MIRROR, SECURITY]


def test_read_system_sources_without_files(tmp_path: Path) -> None:
    assert read_system_sources(tmp_path) == []


def test_os_codename(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text('NAME="Debian GNU/Linux"\nVERSION_CODENAME=bookworm\n')
    assert os_codename(release) == "bookworm"
    release.write_text('NAME="Something"\n')
    assert os_codename(release) is None
    assert os_codename(tmp_path / "missing") is None


def test_debian_sources_drop_third_party_suites() -> None:
    sources = [
        AptSource(MIRROR, ("bookworm", "bookworm-updates", "bullseye"), ("main",)),
        AptSource("http://mirror.example/node", ("nodistro",), ("main",)),
        AptSource("http://mirror.example/flat", ("./",), ()),
    ]
    assert debian_sources(sources, "bookworm") == [
        AptSource(MIRROR, ("bookworm", "bookworm-updates"), ("main",)),
    ]


def test_machine_debian_sources_explains_what_is_missing(tmp_path: Path) -> None:
    release = tmp_path / "os-release"
    release.write_text("VERSION_CODENAME=bookworm\n")
    with pytest.raises(AptSourceError, match="no Debian mirror for 'bookworm'"):
        machine_debian_sources(tmp_path, release)
    with pytest.raises(AptSourceError, match="VERSION_CODENAME"):
        machine_debian_sources(tmp_path, tmp_path / "missing")
    (tmp_path / "sources.list").write_text(f"deb {MIRROR} bookworm main\n")
    assert machine_debian_sources(tmp_path, release) == [
        AptSource(MIRROR, ("bookworm",), ("main",))
    ]


def test_render_sources_list_adds_deb_src_lines() -> None:
    sources = [
        AptSource(MIRROR, ("bookworm", "bookworm-updates"), ("main",), KEYRING),
        AptSource(SECURITY, ("bookworm-security",), ("main", "contrib")),
    ]
    assert render_sources_list(sources).splitlines() == [
        f"deb [signed-by={KEYRING}] {MIRROR} bookworm main",
        f"deb-src [signed-by={KEYRING}] {MIRROR} bookworm main",
        f"deb [signed-by={KEYRING}] {MIRROR} bookworm-updates main",
        f"deb-src [signed-by={KEYRING}] {MIRROR} bookworm-updates main",
        f"deb {SECURITY} bookworm-security main contrib",
        f"deb-src {SECURITY} bookworm-security main contrib",
    ]


def test_render_apt_conf_keeps_everything_private(tmp_path: Path) -> None:
    conf = render_apt_conf(tmp_path, sandbox_user=None)
    values = [line.split('"')[1] for line in conf.splitlines() if line.startswith("Dir::")]
    assert len(values) >= 8
    assert all(value.startswith(str(tmp_path)) for value in values)
    assert f'Dir::Etc::SourceList "{tmp_path}/sources.list";' in conf
    assert "APT::Sandbox::User" not in conf
    assert 'APT::Sandbox::User "root";' in render_apt_conf(tmp_path, sandbox_user="root")


def test_private_apt_writes_files_and_commands(tmp_path: Path) -> None:
    apt = PrivateApt(tmp_path / "apt", [AptSource(MIRROR, ("bookworm",), ("main",))])
    apt.write()
    assert (tmp_path / "apt" / "sources.list").read_text().startswith(f"deb {MIRROR} bookworm")
    assert (tmp_path / "apt" / "state" / "lists" / "partial").is_dir()
    assert (tmp_path / "apt" / "state" / "status").read_text() == ""
    prefix = ["apt-get", "-c", str(apt.conf), "-q", "-y"]
    assert apt.update() == [*prefix, "update"]
    assert apt.download(["etcd-server", "rsync"]) == [*prefix, "download", "etcd-server", "rsync"]
    assert apt.download_source("kubernetes") == [*prefix, "source", "--download-only", "kubernetes"]
