"""The operator under test as a process of its own, and the CPU seconds of processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp

from eqdev.cluster.commands import free_ports
from eqdev.processes import log_tail
from scalebench.options import (
    ADMISSION_CONFIGURATION,
    LOOP_BUDGET,
    PROBE_TIMEOUT,
    STOP_TIMEOUT,
    BenchmarkError,
    Options,
)
from scalebench.output import say


class OperatorProcess:
    """``python -m elasticquota run`` with its probes (and webhooks) on free loopback ports."""

    def __init__(
        self, identity: str, kubeconfig: Path, log_dir: Path, options: Options, webhooks: bool
    ) -> None:
        self.identity = identity
        self.kubeconfig = kubeconfig
        self.log = log_dir / f"operator-{identity}.log"
        self.lease_duration = options.lease_duration
        self.trace_memory = options.trace_memory
        self.nice = options.operator_nice
        self.metrics_port, self.webhook_port = free_ports(2)
        self.webhooks = webhooks
        #: Registered with the API server (managed by the operator) or served only.
        self.configuration = ADMISSION_CONFIGURATION if options.admission else ""
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def start(self) -> OperatorProcess:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        # Every stall above the loop's 0.1-s budget is reported with its stack (``scale stalls``).
        env["ELASTIC_QUOTA_LOOP_STALL_REPORT_AFTER"] = str(LOOP_BUDGET)
        if self.lease_duration is not None:
            env["ELASTIC_QUOTA_LEASE_DURATION"] = str(self.lease_duration)
        entry = [str(Path(__file__).parents[1] / "memtrace.py")] if self.trace_memory else []
        if self.trace_memory:
            env["EQ_MEMTRACE_OUT"] = str(self.memory_report_path)
        command = [
            sys.executable, *(entry or ["-m", "elasticquota"]), "run",
            "--metrics-port", str(self.metrics_port),
            "--identity", self.identity,
        ]  # fmt: skip
        if self.webhooks:
            command += [
                "--webhook-port", str(self.webhook_port),
                "--webhook-address", "127.0.0.1",
                "--webhook-configuration", self.configuration,
            ]  # fmt: skip
        if self.nice:
            command = ["nice", "-n", str(self.nice), *command]  # execs: the pid is the operator's
        with self.log.open("ab") as sink:
            self.started = time.monotonic()
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        say(f"operator {self.identity} started (pid {self.process.pid}, log {self.log})")
        return self

    @property
    def pid(self) -> int:
        if self.process is None:
            raise BenchmarkError(f"operator {self.identity} was never started")
        return self.process.pid

    def check(self) -> None:
        """Raise when the process has exited (with the end of its log)."""
        if self.process is not None and self.process.poll() is not None:
            raise BenchmarkError(
                f"operator {self.identity} exited with code {self.process.returncode}; "
                f"end of its log:\n{self.tail()}"
            )

    def tail(self, lines: int = 40) -> str:
        return log_tail(self.log, lines)

    def peak_rss_mb(self) -> float:
        return self._status_mb("VmHWM:")

    def rss_mb(self) -> float:
        """The resident memory now (``peak_rss_mb``: the most it ever was)."""
        return self._status_mb("VmRSS:")

    def _status_mb(self, field: str) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
        return float("nan")

    @property
    def memory_report_path(self) -> Path:
        return self.log.with_suffix(".memory.txt")

    async def memory_report(self, timeout: float = 300.0) -> str:
        """With ``--trace-memory``: where the operator's Python memory is now (SIGUSR1 to
        ``memtrace.py``, which writes the report)."""
        target = self.memory_report_path
        target.unlink(missing_ok=True)
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while not target.exists():
            if time.monotonic() > deadline:
                raise BenchmarkError(f"no memory report from {self.identity} in {timeout:.0f} s")
            await asyncio.sleep(0.5)
        return target.read_text()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    async def probe(self, session: aiohttp.ClientSession, path: str) -> tuple[int, Any] | None:
        """(HTTP status, JSON body) of a probe endpoint; None when it does not answer."""
        try:
            async with session.get(
                self.url(path), timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
            ) as reply:
                return reply.status, await reply.json(content_type=None)
        except (OSError, TimeoutError, aiohttp.ClientError, ValueError):
            return None

    async def metrics(self, session: aiohttp.ClientSession) -> str:
        async with session.get(self.url("/metrics"), timeout=aiohttp.ClientTimeout(60)) as reply:
            return await reply.text()

    def stop(self) -> None:
        """SIGTERM (the operator releases its Lease), SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        """SIGKILL: a crash, the Lease is not released."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class CpuWatch:
    """The CPU seconds of some processes since it was made: where a phase's time went (on 2
    cores, an API server near 2 s per second is the bound, not the operator)."""

    def __init__(self, pids: Mapping[str, int], operator: OperatorProcess) -> None:
        self._pids = {**pids, "operator": operator.pid}
        self._before = {name: cpu_seconds(pid) for name, pid in self._pids.items()}

    def fields(self, prefix: str = "") -> str:
        """``<prefix><process>_cpu_s=...`` for each process: its CPU seconds so far."""
        return " ".join(
            f"{prefix}{name}_cpu_s={cpu_seconds(pid) - self._before[name]:.1f}"
            for name, pid in self._pids.items()
        )
