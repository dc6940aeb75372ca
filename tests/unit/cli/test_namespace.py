"""The namespace a command reads, as kubectl chooses it: ``-n``, else the context's, else
"default"; ``-A`` every namespace (``cli.cluster.target``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cli_run import kubeconfig

from elasticquota.cli.cluster import add_cluster_options, target


def parsed(*argv: str, lists: bool = True) -> argparse.Namespace:
    command = argparse.ArgumentParser()
    add_cluster_options(command, lists=lists)
    return command.parse_args(argv)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    servers = {"with-ns": "https://a:1", "without": "https://b:1"}
    return kubeconfig(tmp_path / "config", servers, namespaces={"with-ns": "team-a"})


def test_the_current_contexts_namespace(config: Path) -> None:
    assert target(parsed("--kubeconfig", str(config))).namespace == "team-a"


def test_a_context_without_a_namespace_reads_default(config: Path) -> None:
    assert target(parsed("--kubeconfig", str(config), "--context", "without")).namespace == (
        "default"
    )


def test_the_flag_wins_and_all_namespaces_is_none(config: Path) -> None:
    assert target(parsed("--kubeconfig", str(config), "-n", "x")).namespace == "x"
    assert target(parsed("--kubeconfig", str(config), "-A", "-n", "x")).namespace is None


def test_kubeconfig_from_the_environment(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(config))
    chosen = target(parsed("--context", "with-ns"))
    assert (chosen.kubeconfig, chosen.context, chosen.namespace) == (None, "with-ns", "team-a")


def test_a_command_that_does_not_list_has_no_all_namespaces() -> None:
    with pytest.raises(SystemExit):
        parsed("-A", lists=False)


def test_a_kubeconfig_list_skips_its_missing_files(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{config}")
    assert target(parsed()).namespace == "team-a"
