"""Settings when the operator starts: a bad one stops ``elastic-quota run``, the default user
reaches the engine.

A refusal is one line naming the setting, the value, where it came from (a flag, a variable, a file
that does not exist) and the allowed range; ``elastic-quota run`` prints it and exits with 2, never
a traceback, never a hang. The default user of the settings is the engine's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from elasticquota.cli import main
from elasticquota.controller.runner import make_state
from elasticquota.settings import Settings


def test_run_refuses_a_file_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checked when the operator starts: a missing kubeconfig was a traceback from the client."""
    (tmp_path / "tls.key").write_text("key")
    missing = str(tmp_path / "nope")
    argv = ["run", "--kubeconfig", missing, "--webhook-cert", missing]
    assert main([*argv, "--webhook-key", str(tmp_path / "tls.key")]) == 2
    assert capsys.readouterr().err == (
        f"error: invalid settings: kubeconfig = {missing!r} (from --kubeconfig): no such file; "
        f"webhook_cert_file = {missing!r} (from --webhook-cert): no such file\n"
    )


def test_run_names_the_flag_of_a_bad_flag_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--reconcile-interval", "soon", "--metrics-port", "70000"]) == 2
    error = capsys.readouterr().err
    assert error == (
        "error: invalid settings: reconcile_interval = 'soon' (from --reconcile-interval): "
        "allowed: a number from 0.01 to 3600; metrics_port = '70000' (from --metrics-port): "
        "allowed: an integer from 0 to 65535\n"
    )


@pytest.mark.parametrize("eviction", ["revocation", "preemption"])
def test_run_takes_the_minimum_runtimes_and_names_the_flag_of_a_bad_one(
    capsys: pytest.CaptureFixture[str], eviction: str
) -> None:
    assert main(["run", f"--{eviction}-min-runtime", "-5"]) == 2
    assert capsys.readouterr().err == (
        f"error: invalid settings: {eviction}_min_runtime = '-5' (from --{eviction}-min-runtime): "
        "allowed: a number from 0 to 604800\n"
    )


def test_a_choice_argparse_refuses_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--webhook-failure-policy", "Sometimes"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "error: elastic-quota run: argument --webhook-failure-policy: invalid choice: "
        "'Sometimes' (choose from 'Fail', 'Ignore')\n"
    )


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("ELASTIC_QUOTA_EVICTION_RATE", "0", "a number from 0.01 to 1000"),
        ("ELASTIC_QUOTA_RECONCILE_INTERVAL", "1e9", "a number from 0.01 to 3600"),
        ("ELASTIC_QUOTA_LOG_LEVEL", "chatty", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ],
)
def test_the_operator_refuses_a_bad_environment_value_at_start_up(
    variable: str, value: str, words: str
) -> None:
    """``python -m elasticquota run`` as the image runs it: exit 2 at once, one line, no
    traceback (before this, 0 < eviction_rate < 1 started and never evicted)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ELASTIC_QUOTA_")}
    done = subprocess.run(
        [sys.executable, "-m", "elasticquota", "run"],
        env={**environment, variable: value, "KUBECONFIG": os.devnull},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    name = variable.removeprefix("ELASTIC_QUOTA_").lower()
    assert lines[0] == (
        f"error: invalid settings: {name} = {value!r} (from {variable}): allowed: {words}"
    )
    assert "Traceback" not in done.stderr


def test_the_default_user_reaches_the_engine() -> None:
    """``DEFAULT_USER`` is who a pod without identity counts for in the engine's user limits."""
    state = make_state(Settings(identity="test", default_user="anonymous"))
    assert state.engine.settings.default_user == "anonymous"
    assert state.engine.user_limits().default_user == "anonymous"
