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

:func:`apply_crds` creates or replaces CRDs through the API (kubernetes_asyncio, not kubectl) and
waits until each is ``Established``.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import yaml

from eqdev.cluster.build import Binaries, ensure_binaries, say
from eqdev.cluster.pki import Pki, create_pki

LOOPBACK = "127.0.0.1"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc"
ENABLED_ADMISSION = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
DISABLED_ADMISSION = ("ServiceAccount",)
_T = TypeVar("_T")

CONTROLLERS = ("*", "-serviceaccount-token", "-nodelifecycle")
CONTEXT_NAME = "elastic-quota-local"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
POLL_INTERVAL = 0.1
PORT_ATTEMPTS = 3
LOG_TAIL_LINES = 30


class ClusterError(RuntimeError):
    """The local control plane could not start (the message ends with the failing log)."""


class _PortTakenError(ClusterError):
    """A component lost the race for a port chosen as free; retried with new ports."""


# ---------------------------------------------------------------------------------------------
# Pure helpers


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports that are free on ``host`` right now (the OS picks them)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def kubeconfig_document(server: str, ca_pem: bytes, token: str) -> dict[str, Any]:
    """A kubeconfig with one cluster (CA data inline), one token user and one context."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT_NAME,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": CONTEXT_NAME, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }


def etcd_args(etcd: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client = f"http://{LOOPBACK}:{client_port}"
    peer = f"http://{LOOPBACK}:{peer_port}"
    return [
        str(etcd),
        "--name=default",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=default={peer}",
        "--unsafe-no-fsync",
        "--logger=zap",
        "--log-level=warn",
    ]


def apiserver_args(
    apiserver: Path, pki: Pki, etcd_port: int, secure_port: int, cert_dir: Path
) -> list[str]:
    return [
        str(apiserver),
        f"--etcd-servers=http://{LOOPBACK}:{etcd_port}",
        f"--bind-address={LOOPBACK}",
        f"--advertise-address={LOOPBACK}",
        f"--secure-port={secure_port}",
        "--insecure-port=0",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={pki.token_file}",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.service_account_pub}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        f"--enable-admission-plugins={','.join(ENABLED_ADMISSION)}",
        f"--disable-admission-plugins={','.join(DISABLED_ADMISSION)}",
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
    ]


def controller_manager_args(
    controller_manager: Path, kubeconfig: Path, pki: Pki, controllers: Sequence[str]
) -> list[str]:
    return [
        str(controller_manager),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--port=0",
        "--secure-port=0",
        "--use-service-account-credentials=false",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca_cert}",
        f"--controllers={','.join(controllers)}",
        "--profiling=false",
    ]


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


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
                    f"{log_tail(process.log)}"
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
            f"end of {process.log.name}:\n{log_tail(process.log)}"
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


# ---------------------------------------------------------------------------------------------
# CRDs


def default_crd_dir() -> Path:
    """The repository's ``crds/`` directory (or ``./crds`` when installed elsewhere)."""
    in_repo = Path(__file__).resolve().parents[3] / "crds"
    return in_repo if in_repo.is_dir() else Path.cwd() / "crds"


def load_crds(crd_dir: Path) -> list[dict[str, Any]]:
    """Every ``CustomResourceDefinition`` document in ``crd_dir/*.yaml`` (sorted by file name)."""
    documents: list[dict[str, Any]] = []
    for path in sorted(crd_dir.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            for document in yaml.safe_load_all(handle):
                if (
                    isinstance(document, dict)
                    and document.get("kind") == "CustomResourceDefinition"
                ):
                    documents.append(document)
    if not documents:
        raise ClusterError(f"no CustomResourceDefinition found in {crd_dir}/*.yaml")
    return documents


def _established(crd: Any) -> tuple[bool, str | None]:
    """Whether a CRD is Established, and why not if its names were rejected."""
    conditions: Iterable[Any] = getattr(getattr(crd, "status", None), "conditions", None) or ()
    for condition in conditions:
        if condition.type == "NamesAccepted" and condition.status == "False":
            return False, f"names not accepted: {condition.message}"
        if condition.type == "Established" and condition.status == "True":
            return True, None
    return False, None


def _api_error_message(error: Any) -> str:
    """``HTTP 422: <the Status message>`` from a kubernetes_asyncio ApiException."""
    try:
        message = json.loads(error.body)["message"]
    except (TypeError, ValueError, KeyError):
        message = error.reason
    return f"HTTP {error.status}: {message}"


async def _create_or_replace(api: Any, document: dict[str, Any]) -> None:
    from kubernetes_asyncio.client.exceptions import ApiException

    name = str(document["metadata"]["name"])
    try:
        try:
            await api.create_custom_resource_definition(body=document)
        except ApiException as error:
            if error.status != 409:
                raise
            existing = await api.read_custom_resource_definition(name)
            version = existing.metadata.resource_version
            body = {**document, "metadata": {**document["metadata"], "resourceVersion": version}}
            await api.replace_custom_resource_definition(name, body=body)
    except ApiException as error:
        raise ClusterError(f"CRD {name} was refused: {_api_error_message(error)}") from None


async def apply_crds(kubeconfig: Path, crd_dir: Path, *, timeout: float = 60.0) -> list[str]:
    """Create or replace every CRD of ``crd_dir`` and wait until each is Established."""
    from kubernetes_asyncio import client, config  # the operator's dependency; imported lazily

    documents = load_crds(crd_dir)
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration=configuration) as api_client:
        api = client.ApiextensionsV1Api(api_client)
        for document in documents:
            await _create_or_replace(api, document)
        names = [str(document["metadata"]["name"]) for document in documents]
        deadline = time.monotonic() + timeout
        for name in names:
            await _wait_established(api, name, deadline)
    return names


async def _wait_established(api: Any, name: str, deadline: float) -> None:
    while True:
        established, problem = _established(await api.read_custom_resource_definition(name))
        if established:
            return
        if problem is not None:
            raise ClusterError(f"CRD {name}: {problem}")
        if time.monotonic() > deadline:
            raise ClusterError(f"CRD {name} is not Established in time")
        await asyncio.sleep(POLL_INTERVAL)


def apply_crds_sync(kubeconfig: Path, crd_dir: Path, *, timeout: float = 60.0) -> list[str]:
    """:func:`apply_crds` for synchronous callers (runs its own event loop)."""
    return asyncio.run(apply_crds(kubeconfig, crd_dir, timeout=timeout))
