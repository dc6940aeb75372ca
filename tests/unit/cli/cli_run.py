"""The CLI through its real entry points, for the tests of this directory.

``run(...)`` starts ``python -m elasticquota ARGS`` (or a given script) in a process of its own,
with no kubeconfig from the environment unless the test gives one, and returns the exit code and
what it printed. ``kubeconfig(...)`` writes a kubeconfig file; ``ApiServerStub`` is a plain HTTP
server on a loopback port answering every request with one status and body (what a 403 or a
broken API server sends back), for the error paths that need no real cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from cli_result import CliResult

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent
#: Environment variables that would point a command at a cluster the test did not choose.
CLUSTER_VARIABLES = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def environment(home: Path | None = None, **extra: str) -> dict[str, str]:
    """This process's environment without a cluster (and with ``home`` as $HOME if given)."""
    env = {key: value for key, value in os.environ.items() if key not in CLUSTER_VARIABLES}
    if home is not None:
        env["HOME"] = str(home)
    env.update(extra)
    return env


def run(
    *argv: str | Path,
    program: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    stdin: str = "",
) -> CliResult:
    """``python -m elasticquota ARGV`` (or ``program ARGV``) in a process of its own, ``stdin``
    on its standard input."""
    command = [*(program or [sys.executable, "-m", "elasticquota"]), *map(str, argv)]
    done = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env if env is not None else environment(),
        timeout=timeout,
    )
    assert "Traceback" not in done.stderr or "--debug" in argv, done.stderr
    return CliResult(done.returncode, done.stdout, done.stderr)


def kubeconfig(
    path: Path,
    servers: dict[str, str],
    current: str | None = None,
    namespaces: dict[str, str] | None = None,
) -> Path:
    """A kubeconfig with one context per server (``{context: server URL}``), each with its own
    cluster and a token user; ``namespaces`` sets a context's namespace."""
    namespaces = namespaces or {}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current or next(iter(servers)),
        "clusters": [{"name": name, "cluster": {"server": url}} for name, url in servers.items()],
        "users": [{"name": "user", "user": {"token": "not-a-real-token"}}],
        "contexts": [
            {
                "name": name,
                "context": {
                    "cluster": name,
                    "user": "user",
                    **({"namespace": namespaces[name]} if name in namespaces else {}),
                },
            }
            for name in servers
        ],
    }
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


class ApiServerStub:
    """``with ApiServerStub(status, body) as url``: every request answered with ``status`` and the
    JSON ``body`` (``paths`` overrides it per path) on http://127.0.0.1:PORT."""

    def __init__(
        self, status: int, body: Any, paths: dict[str, tuple[int, Any]] | None = None
    ) -> None:
        answers = dict(paths or {})
        default = (status, body)
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                code, payload = answers.get(self.path.split("?")[0], default)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def status(code: int, reason: str) -> dict[str, Any]:
    """A Kubernetes ``Status`` body as the API server sends it with an error."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": reason,
        "reason": reason,
        "code": code,
    }


QUOTAS_PATH = "/apis/scheduling.sigs.k8s.io/v1alpha1/elasticquotas"


def quota_list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuotaList",
            "metadata": {}, "items": list(items)}  # fmt: skip
