"""``elastic-quota run`` without usable credentials: one line and exit 3, as the read commands.

A kubeconfig that does not exist, none at all outside a pod, or a pod without its service
account's token was the Kubernetes client's ``ConfigException`` reported as a bug (exit 70); now
the same check as ``tree`` and ``explain`` runs before the operator starts (the missing file or
context named), and what the client refuses later is said as credentials that cannot be loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from elasticquota.cli import main

EXIT_KUBECONFIG = 3


@pytest.fixture
def homeless(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No ~/.kube/config, no $KUBECONFIG, not in a pod."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def test_a_kubeconfig_variable_naming_no_file_is_said_before_anything_starts(
    homeless: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = homeless / "nope"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    assert main(["run", "--identity", "t"]) == EXIT_KUBECONFIG
    assert capsys.readouterr().err == f"error: kubeconfig {missing}: no such file\n"


def test_no_kubeconfig_outside_a_pod_is_said(
    homeless: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--identity", "t"]) == EXIT_KUBECONFIG
    assert capsys.readouterr().err == (
        "error: no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a pod\n"
    )


def test_a_kubeconfig_without_the_context_is_said(
    homeless: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = homeless / "config"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncontexts: []\nclusters: []\nusers: []\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert main(["run", "--identity", "t"]) == EXIT_KUBECONFIG
    assert capsys.readouterr().err == (
        f"error: kubeconfig {kubeconfig}: no current context (choose with --context)\n"
    )


def test_credentials_the_client_refuses_are_said_as_such(homeless: Path) -> None:
    """In a pod whose service variables are incomplete (as one without its token, the in-cluster
    loader refuses inside the operator: a process of its own, the operator freezes its heap as
    it starts)."""
    environment = {**os.environ, "KUBERNETES_SERVICE_HOST": "10.0.0.1"}  # no port: refused
    environment["ELASTIC_QUOTA_METRICS_PORT"] = "0"
    ran = subprocess.run(
        [sys.executable, "-m", "elasticquota", "run", "--identity", "t"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert ran.returncode == EXIT_KUBECONFIG, ran.stderr
    assert ran.stderr.endswith(
        "error: cannot load the credentials: Service host/port is not set.\n"
    )
