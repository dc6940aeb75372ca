"""The chart's Deployment run as a local process (``test_chart_*.py``): its pod's command, args,
environment with the fieldRef values substituted, the rendered TLS Secret's files and the
emptyDirs at local paths; plus KUBECONFIG, as it runs outside the cluster. Waited for on the
rendered readiness probe and until it holds the Lease in the release namespace under the pod's
name.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from chart_helpers import kubectl, one
from chart_render import Manifest
from harness import eventually, stop_process
from ports import free_port


class Pod:
    """The rendered Deployment's pod, run as a local process."""

    def __init__(self, manifests: list[Manifest], root: Path) -> None:
        self.manifests = manifests
        deployment = one(manifests, "Deployment")
        self.name = f"{deployment['metadata']['name']}-7c9d5b6f4-x2x7q"
        self.namespace: str = deployment["metadata"]["namespace"]
        self.spec: Manifest = deployment["spec"]["template"]["spec"]
        (self.container,) = self.spec["containers"]
        self.root = root
        self.mounts = self._mount_volumes()
        self.log = root / "operator.log"
        self.process: subprocess.Popen[bytes] | None = None

    def _mount_volumes(self) -> dict[str, Path]:
        """Mount path -> local directory: emptyDirs empty, Secrets with the rendered Secret's
        files (the kubelet's projection of ``data``)."""
        volumes = {volume["name"]: volume for volume in self.spec["volumes"]}
        secrets = {
            body["metadata"]["name"]: body for body in self.manifests if body["kind"] == "Secret"
        }
        mounts = {}
        for mount in self.container["volumeMounts"]:
            volume = volumes[mount["name"]]
            local = self.root / "volumes" / mount["name"]
            local.mkdir(parents=True)
            if "secret" in volume:
                secret = secrets[volume["secret"]["secretName"]]
                for key, value in secret["data"].items():
                    (local / key).write_bytes(base64.b64decode(value))
            else:
                assert set(volume) == {"name", "emptyDir"}, f"unexpected volume {volume}"
            mounts[mount["mountPath"]] = local
        return mounts

    def _local_path(self, value: str) -> str:
        for mount_path, local in self.mounts.items():
            if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
                return str(local) + value[len(mount_path.rstrip("/")) :]
        return value

    def environment(self) -> dict[str, str]:
        """The container's environment, fieldRefs resolved and mount paths mapped."""
        fields = {"metadata.name": self.name, "metadata.namespace": self.namespace}
        env: dict[str, str] = {}
        for variable in self.container["env"]:
            if "valueFrom" in variable:
                field_path = variable["valueFrom"]["fieldRef"]["fieldPath"]
                env[variable["name"]] = fields[field_path]
            else:
                env[variable["name"]] = self._local_path(variable["value"])
        return env

    def command(self) -> list[str]:
        """command + args, the executable resolved to this environment's console script."""
        parts: list[str] = [*self.container["command"], *self.container.get("args", [])]
        executable, *rest = parts
        local = Path(sys.executable).parent / executable
        found = str(local) if local.exists() else shutil.which(executable)
        assert found, f"{executable} not found"
        return [found, *rest]

    def container_port(self, name: str) -> int:
        ports = {port["name"]: port["containerPort"] for port in self.container["ports"]}
        port: int = ports[name]
        return port

    def start(self, kubeconfig: Path | None = None) -> None:
        """Start the process; ``kubeconfig``: its credentials (default: the session's admin)."""
        env = {
            **self.environment(),
            # Outside the cluster: the API server from a kubeconfig (the test session's unless
            # told), and the console script's directory on PATH. /tmp is the emptyDir in the pod.
            "KUBECONFIG": str(kubeconfig or os.environ["KUBECONFIG"]),
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "TMPDIR": str(self.mounts.get("/tmp", self.root)),
        }
        if "PYTHONPATH" in os.environ:  # the sources under test, where they are not installed
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                self.command(), env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=self.root
            )

    def stop(self) -> None:
        stop_process(self.process)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:] if self.log.exists() else ""

    def http_status(self, probe: Manifest) -> int | None:
        """The status an httpGet probe would see (None: no answer)."""
        get = probe["httpGet"]
        port = get["port"] if isinstance(get["port"], int) else self.container_port(get["port"])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{get['path']}", timeout=2) as r:
                status: int = r.status
                return status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return None

    def http_body(self, container_port: int, path: str = "/metrics") -> str:
        """What a GET on this container port answers (e.g. the metrics exposition)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{container_port}{path}", timeout=5) as r:
            body: bytes = r.read()
            return body.decode()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def operator_values() -> Manifest:
    """Values for a local run: free ports for the probes/metrics and the webhooks."""
    return {"metrics": {"port": free_port()}, "webhooks": {"port": free_port()}}


async def wait_ready(operator: Pod, timeout: float = 180) -> float:
    """Seconds until the rendered readiness probe answers 200; the process must stay up."""
    readiness = operator.container["readinessProbe"]
    started = time.monotonic()

    def ready() -> bool:
        if not operator.alive():
            raise AssertionError(f"the operator exited\n{operator.output()}")
        return operator.http_status(readiness) == 200

    await eventually(ready, timeout=timeout, what="readiness")
    return time.monotonic() - started


async def wait_for_lease(operator: Pod) -> None:
    """The rendered Lease, in the release namespace, held under the pod's name."""
    lease_name = operator.environment()["ELASTIC_QUOTA_LEASE_NAME"]

    def holder() -> bool:
        found = subprocess.run(
            [kubectl(), "get", "lease", lease_name, "-n", operator.namespace,
             "--output=jsonpath={.spec.holderIdentity}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return found.stdout == operator.name

    await eventually(holder, timeout=60, what=f"the Lease held by {operator.name}")


@contextlib.contextmanager
def running(operator: Pod, kubeconfig: Path | None = None) -> Iterator[Pod]:
    """The operator started (with ``kubeconfig``'s credentials, if given), stopped after; an
    assertion failing inside carries its log; it must exit cleanly on SIGTERM."""
    operator.start(kubeconfig)
    try:
        yield operator
    except AssertionError as error:
        raise AssertionError(f"{error}\n--- operator log ---\n{operator.output()}") from None
    finally:
        operator.stop()
    assert operator.process is not None and operator.process.returncode == 0, operator.output()
