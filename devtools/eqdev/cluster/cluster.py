"""A real kube-apiserver + etcd (+ kube-controller-manager) on loopback, for tests and demos.

:class:`LocalCluster` starts the binaries of :func:`.build.ensure_binaries` on random free loopback
ports with a throwaway PKI (:mod:`.pki`), writes a kubeconfig (token auth, CA data) into its run
directory and waits for ``/readyz``. :meth:`LocalCluster.stop` terminates the processes by their
recorded PIDs (then kills what is left after a timeout) and deletes the run directory; it is
idempotent, runs on any error or ``KeyboardInterrupt`` during :meth:`start`, and is registered
with :mod:`atexit` while the cluster runs.

Choices that differ from a production control plane, and why:

- no kubelet and no scheduler: tests bind pods (``pods/binding``) and patch ``pods/status``;
- the ``ServiceAccount`` admission plugin and the service-account token controller are off (no
  token secrets are needed without a kubelet);
- the node-lifecycle controller is off: nodes created by tests have no kubelet heartbeat, and it
  would otherwise taint them ``unreachable`` after 40 s and evict their pods after five minutes.
  Garbage collection, namespace deletion and the workload controllers run.

The project's CRDs are installed by :mod:`.crds`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

import yaml

from eqdev.cluster.binaries import Binaries, say
from eqdev.cluster.build import ensure_binaries
from eqdev.cluster.commands import (
    LOOPBACK,
    apiserver_args,
    controller_manager_args,
    etcd_args,
    free_ports,
    kubeconfig_document,
)
from eqdev.cluster.pki import Pki, create_pki
from eqdev.processes import log_tail

_T = TypeVar("_T")

CONTROLLERS = ("*", "-serviceaccount-token", "-nodelifecycle")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
POLL_INTERVAL = 0.1
PORT_ATTEMPTS = 3
#: How many lines of a failed process's log its error shows.
LOG_TAIL_LINES = 30


class ClusterError(RuntimeError):
    """The local control plane could not start (the message ends with the failing log)."""


class _PortTakenError(ClusterError):
    """A component lost the race for a port chosen as free; retried with new ports."""


# ---------------------------------------------------------------------------------------------
# The cluster


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


class LocalCluster:
    """kube-apiserver + etcd (+ kube-controller-manager) on loopback; ``with`` starts and stops it.

    After :meth:`start`: :attr:`server` (``https://127.0.0.1:<port>``), :attr:`kubeconfig`,
    :attr:`token`, :attr:`ca_file`, :attr:`run_dir` and :attr:`pids` are available.
    """

    def __init__(
        self,
        binaries: Binaries | None = None,
        *,
        controller_manager: bool = True,
        controllers: Sequence[str] = CONTROLLERS,
        base_dir: Path | None = None,
        start_timeout: float = START_TIMEOUT,
        stop_timeout: float = STOP_TIMEOUT,
    ) -> None:
        self._binaries = binaries
        self._with_controller_manager = controller_manager
        self._controllers = tuple(controllers)
        self._base_dir = base_dir
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._processes: list[_Process] = []
        self._run_dir: Path | None = None
        self._pki: Pki | None = None
        self._server: str | None = None
        self.startup_seconds: float | None = None

    # -- public state

    @property
    def binaries(self) -> Binaries:
        return self._require(self._binaries, "binaries")

    @property
    def run_dir(self) -> Path:
        return self._require(self._run_dir, "run_dir")

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return self._require(self._server, "server")

    @property
    def token(self) -> str:
        return self._require(self._pki, "token").token

    @property
    def ca_file(self) -> Path:
        return self._require(self._pki, "ca_file").ca_cert

    @property
    def pids(self) -> dict[str, int]:
        return {process.name: process.popen.pid for process in self._processes}

    @property
    def running(self) -> bool:
        return bool(self._processes) and all(p.popen.poll() is None for p in self._processes)

    def _require(self, value: _T | None, what: str) -> _T:
        if value is None:
            raise ClusterError(f"{what} is only known while the cluster runs (call start())")
        return value

    # -- lifecycle

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> Self:
        """Start everything and wait until ``/readyz`` answers; on any failure, clean up."""
        if self._run_dir is not None:
            raise ClusterError(f"this cluster is already running in {self._run_dir}")
        atexit.register(self.stop)
        try:
            if self._binaries is None:
                self._binaries = ensure_binaries()
            started = time.monotonic()
            self._start_with_retries()
            self.startup_seconds = time.monotonic() - started
        except BaseException:
            self.stop()
            raise
        return self

    def _start_with_retries(self) -> None:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._start_once()
                return
            except _PortTakenError as error:
                self._stop_processes()
                self._remove_run_dir()
                if attempt == PORT_ATTEMPTS:
                    raise ClusterError(f"no free ports after {attempt} attempts: {error}") from None
                say(f"a port was taken meanwhile; retrying with new ports ({error})")

    def _start_once(self) -> None:
        binaries = self.binaries
        run_dir = Path(tempfile.mkdtemp(prefix="elastic-quota-cluster-", dir=self._base_dir))
        self._run_dir = run_dir
        self._pki = pki = create_pki(run_dir / "pki")
        etcd_port, peer_port, secure_port = free_ports(3)
        self._server = f"https://{LOOPBACK}:{secure_port}"
        self._write_kubeconfig()
        deadline = time.monotonic() + self._start_timeout
        self._spawn("etcd", etcd_args(binaries.etcd, run_dir / "etcd", etcd_port, peer_port))
        self._wait_for("etcd", f"http://{LOOPBACK}:{etcd_port}/health", deadline, None)
        args = apiserver_args(
            binaries.kube_apiserver, pki, etcd_port, secure_port, run_dir / "apiserver-certs"
        )
        self._spawn("kube-apiserver", args)
        self._wait_for("kube-apiserver", f"{self._server}/readyz", deadline, self._tls())
        if self._with_controller_manager:
            cm = binaries.kube_controller_manager
            args = controller_manager_args(cm, self.kubeconfig, pki, self._controllers)
            self._spawn("kube-controller-manager", args)
        self._write_pids()

    def check(self) -> None:
        """Raise :class:`ClusterError` (with the log's end) if a component has exited."""
        for process in self._processes:
            code = process.popen.poll()
            if code is not None:
                raise ClusterError(
                    f"{process.name} exited with code {code}; end of {process.log.name}:\n"
                    f"{log_tail(process.log, LOG_TAIL_LINES)}"
                )

    def stop(self) -> None:
        """Terminate the processes (kill after a timeout) and delete the run directory.

        Idempotent; safe to call after a failed or interrupted :meth:`start`.
        """
        self._stop_processes()
        self._remove_run_dir()
        self._pki = None
        self._server = None
        atexit.unregister(self.stop)

    # -- internals

    def _tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def _write_kubeconfig(self) -> None:
        document = kubeconfig_document(self.server, self.ca_file.read_bytes(), self.token)
        self.kubeconfig.write_text(yaml.safe_dump(document, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _write_pids(self) -> None:
        (self.run_dir / "pids.json").write_text(json.dumps(self.pids, indent=2) + "\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = self.run_dir / f"{name}.log"
        with log.open("wb") as handle:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                cwd=self.run_dir,
                start_new_session=True,  # a terminal's Ctrl-C reaches us, and we stop them in order
            )
        self._processes.append(_Process(name, popen, log))

    def _wait_for(
        self, name: str, url: str, deadline: float, context: ssl.SSLContext | None
    ) -> None:
        request = urllib.request.Request(url)
        if context is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        # Loopback only: ignore any HTTP(S)_PROXY of the environment.
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        last = "no answer yet"
        while time.monotonic() < deadline:
            self._check_started()
            try:
                with opener.open(request, timeout=2) as response:
                    if response.status == 200:
                        return
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as error:
                last = f"HTTP {error.code}"
                error.close()
            except (OSError, ValueError) as error:
                last = str(error)
            time.sleep(POLL_INTERVAL)
        process = self._processes[-1]
        raise ClusterError(
            f"{name} was not ready at {url} after {self._start_timeout:.0f} s ({last}); "
            f"end of {process.log.name}:\n{log_tail(process.log, LOG_TAIL_LINES)}"
        )

    def _check_started(self) -> None:
        try:
            self.check()
        except ClusterError as error:
            if "address already in use" in str(error):
                raise _PortTakenError(str(error).splitlines()[0]) from None
            raise

    def _stop_processes(self) -> None:
        for process in reversed(self._processes):
            with contextlib.suppress(ProcessLookupError):
                process.popen.terminate()
        deadline = time.monotonic() + self._stop_timeout
        for process in self._processes:
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
        self._processes = []

    def _remove_run_dir(self) -> None:
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None
