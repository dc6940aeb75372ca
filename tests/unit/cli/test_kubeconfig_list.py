"""$KUBECONFIG naming several files, merged as kubectl merges them: the first file that sets
``current-context`` chooses the context (its server and its namespace), a later file's only when
no earlier one sets it (``kube.client.KubeconfigFiles``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from cli_run import ApiServerStub, environment, kubeconfig, quota_list, run
from ports import free_port

from elasticquota.cli.cluster import add_cluster_options, target
from elasticquota.kube import client as client_module

pytestmark = pytest.mark.timeout(300)


def parsed(*argv: str) -> argparse.Namespace:
    command = argparse.ArgumentParser()
    add_cluster_options(command, lists=True)
    return command.parse_args(argv)


def two_files(tmp_path: Path, first_server: str, second_server: str) -> str:
    first = kubeconfig(tmp_path / "first", {"a": first_server}, namespaces={"a": "ns-a"})
    second = kubeconfig(tmp_path / "second", {"b": second_server}, namespaces={"b": "ns-b"})
    return f"{first}{os.pathsep}{second}"


def test_the_first_files_current_context_gives_the_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", two_files(tmp_path, "https://a:1", "https://b:1"))
    assert target(parsed()).namespace == "ns-a"


def test_a_later_files_current_context_counts_when_no_earlier_one_sets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = two_files(tmp_path, "https://a:1", "https://b:1")
    first = tmp_path / "first"
    first.write_text(first.read_text().replace("current-context: a", "current-context: ''"))
    monkeypatch.setenv("KUBECONFIG", paths)
    assert target(parsed()).namespace == "ns-b"


def test_the_first_files_current_context_gives_the_server(tmp_path: Path) -> None:
    """The first file's context answers; the second's is a closed port."""
    with ApiServerStub(200, quota_list()) as url:
        paths = two_files(tmp_path, url, f"https://127.0.0.1:{free_port()}")
        result = run("tree", "-A", "-o", "json", env=environment(KUBECONFIG=paths))
    assert result.code == 0, result.err
    assert result.json()["quotas"] == {}


@pytest.mark.parametrize("memory_files", [True, False], ids=["linux", "elsewhere"])
async def test_the_client_connects_to_the_first_files_context(
    memory_files: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's and the CLI's client, with inline certificates in memory files (Linux) or in
    the loader's temporary files (elsewhere)."""
    monkeypatch.setattr(client_module, "memory_files_supported", lambda: memory_files)
    paths = two_files(tmp_path, "https://first:1", "https://second:1")
    configuration = await client_module.load_configuration(paths)
    assert configuration.host == "https://first:1"
