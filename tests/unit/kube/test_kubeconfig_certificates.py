"""A kubeconfig's inline certificates are kept in memory: no process leaves a temporary file behind.

``kubernetes_asyncio`` writes inline certificate data to temporary files it removes only at a normal
exit, so every killed operator left them (a private key among them) in the temporary directory.
The operator's loader (``kube.client.load_kubeconfig``) puts them in memory files instead; the
tests give each process a private ``TMPDIR`` and look at it afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.config import ConfigException

from elasticquota.controller.webhooks.certs import self_signed_certificate
from elasticquota.kube.client import make_api_client, memory_files_supported
from elasticquota.kube.readerhttp import ssl_context

pytestmark = [
    pytest.mark.skipif(
        not memory_files_supported(), reason="memory files (memfd_create, /proc) are Linux only"
    ),
    # Loading a kubeconfig allocates enough to start a collection, which may then find the event
    # loop pytest-asyncio leaves behind after a synchronous test (pytest-asyncio#724), not ours.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

#: Loads the kubeconfig of argv[1] as the operator does, says so, and waits to be killed.
LOAD_AND_WAIT = """
import asyncio, sys
from elasticquota.kube.client import make_api_client

async def main():
    await make_api_client(sys.argv[1])
    print("loaded", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode("ascii")


def write_kubeconfig(path: Path, ca_data: str | None = None) -> Path:
    """A kubeconfig with an inline CA and an inline client certificate and key."""
    ca, _ = self_signed_certificate(["ca.example.test"])
    certificate, key = self_signed_certificate(["client.example.test"])
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://api.example.test:6443",
                    "certificate-authority-data": ca_data or b64(ca),
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {"client-certificate-data": b64(certificate), "client-key-data": b64(key)},
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def private_tmp(tmp_path: Path) -> Path:
    directory = tmp_path / "tmp"
    directory.mkdir()
    return directory


async def test_a_killed_process_leaves_no_temporary_file(tmp_path: Path, private_tmp: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOAD_AND_WAIT, str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(private_tmp)},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        assert await asyncio.wait_for(process.stdout.readline(), 60) == b"loaded\n"
    finally:
        process.kill()  # SIGKILL: no exit handler runs
        await process.wait()
    assert sorted(str(path) for path in private_tmp.rglob("*")) == []


async def test_the_certificates_are_read_from_memory_and_trusted(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    kubeconfig = write_kubeconfig(tmp_path / "config")
    api = await make_api_client(str(kubeconfig))
    again = await make_api_client(str(kubeconfig))
    try:
        configuration = api.configuration
        paths = (configuration.ssl_ca_cert, configuration.cert_file, configuration.key_file)
        assert all(path.startswith("/proc/self/fd/") for path in paths), paths
        # the same kubeconfig loaded again reuses the memory files
        again_paths = (again.configuration.ssl_ca_cert, again.configuration.cert_file)
        assert again_paths == paths[:2]
        # the readers' TLS context (kube.reflector): the CA trusted, the client key pair loaded
        context = ssl_context(configuration)
        subjects = [certificate["subject"] for certificate in context.get_ca_certs()]
        assert subjects == [((("commonName", "ca.example.test"),),)]
        assert list(private_tmp.iterdir()) == []
    finally:
        await api.close()
        await again.close()


async def test_broken_certificate_data_is_refused_naming_the_entry(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", ca_data="not*base64")
    with pytest.raises(ConfigException, match="clusters entry 'c': certificate-authority-data"):
        await make_api_client(str(kubeconfig))
