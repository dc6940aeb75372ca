"""The CLI against the real API server, through ``python -m elasticquota`` with ``--kubeconfig``
and ``--context``: ``tree -o json`` and ``explain`` read what is there; a wrong token (401) and a
user without any RBAC role (403, a client certificate the server's CA signed) are exit 5, one line.

The kubeconfig the commands get is a copy of the suite's whose context has another name and is not
the current one (the current one points at a closed port): only ``--context`` reaches the server.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import sys
from pathlib import Path
from typing import Any

import harness
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes_asyncio import client
from ports import free_port

from elasticquota.cli import errors
from elasticquota.cli.output import API_VERSION
from elasticquota.kube.apply import apply_manifest
from eqdev.cluster import LocalCluster

pytestmark = pytest.mark.timeout(300)

CONTEXT = "the-real-one"


async def cli(*argv: str | Path) -> tuple[int, str, str]:
    """``elastic-quota ARGV`` in a process of its own; never a traceback."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "elasticquota", *map(str, argv),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert b"Traceback" not in err, err.decode()
    return process.returncode or 0, out.decode(), err.decode()


def two_contexts(
    local_cluster: LocalCluster, path: Path, user: dict[str, Any] | None = None
) -> Path:
    """The suite's kubeconfig with its context renamed ``CONTEXT`` (and its user replaced by
    ``user`` if given), plus a current context ``closed`` on a closed port."""
    config = yaml.safe_load(local_cluster.kubeconfig.read_text())
    real = config["contexts"][0]
    real["name"] = CONTEXT
    if user is not None:
        config["users"][0]["user"] = user
    config["clusters"].append(
        {"name": "closed", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}
    )
    config["contexts"].append(
        {"name": "closed", "context": {"cluster": "closed", "user": real["context"]["user"]}}
    )
    config["current-context"] = "closed"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture
async def team(api: client.ApiClient) -> str:
    """A namespace with its quota (same name) and one pending pod ``waiting`` of 1 cpu."""
    namespace = harness.unique("cli")
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(harness.unique("node"), "8", "32Gi"))
    quota = harness.quota_manifest(namespace, namespace, {"cpu": "2"}, {"cpu": "4"})
    await apply_manifest(api, quota)
    await apply_manifest(api, harness.pod_manifest(namespace, "waiting", "1", "1Gi"))
    return namespace


async def test_tree_and_explain_read_the_cluster_of_the_context(
    local_cluster: LocalCluster, team: str, tmp_path: Path
) -> None:
    config = two_contexts(local_cluster, tmp_path / "config")
    where = ("--kubeconfig", config, "--context", CONTEXT)

    code, out, err = await cli("tree", *where, "-n", team, "-o", "json")
    assert code == 0, err
    document = json.loads(out)
    assert (document["apiVersion"], document["kind"]) == (API_VERSION, "QuotaTree")
    assert document["namespace"] == team
    assert list(document["quotas"]) == [team]
    assert document["quotas"][team]["min"] == {"cpu": "2"}
    assert document["quotas"][team]["max"] == {"cpu": "4"}

    code, out, err = await cli("explain", "waiting", *where, "-n", team)
    assert code == 0, err
    assert out.startswith(f"pod {team}/waiting: ")
    assert f"quota: {team}\n" in out

    code, out, err = await cli("explain", f"{team}/waiting", *where, "-o", "yaml")
    assert code == 0, err
    explained = yaml.safe_load(out)
    assert (explained["kind"], explained["pod"], explained["quota"]) == (
        "PodExplanation", f"{team}/waiting", team
    )  # fmt: skip

    code, out, err = await cli("tree", "nosuch", *where, "-n", team)
    assert (code, out) == (errors.EXIT_NOT_FOUND, "")
    assert err == f"error: quota nosuch not found in namespace {team} (-A: every namespace)\n"
    code, out, err = await cli("explain", "nobody", *where, "-n", team)
    assert (code, out) == (errors.EXIT_NOT_FOUND, "")
    assert err.startswith(f"error: pod {team}/nobody not found") and err.count("\n") == 1

    code, out, err = await cli("tree", "--kubeconfig", config, "-A")  # the current context
    assert (code, out) == (errors.EXIT_UNREACHABLE, "")
    assert err.startswith("error: cannot reach the API server: ") and err.count("\n") == 1


async def test_a_wrong_token_is_exit_5(local_cluster: LocalCluster, tmp_path: Path) -> None:
    config = two_contexts(local_cluster, tmp_path / "config", user={"token": "wrong"})
    for command in (["tree", "-A"], ["explain", "default/p"], ["usage", "users"]):
        code, out, err = await cli(*command, "--kubeconfig", config, "--context", CONTEXT)
        assert (code, out) == (errors.EXIT_FORBIDDEN, ""), err
        assert err.startswith("error: cannot read the cluster: 401 Unauthorized")
        assert err.count("\n") == 1


def client_certificate(ca_cert: Path, ca_key: Path, user: str) -> dict[str, str]:
    """A kubeconfig user entry with a client certificate for ``user`` signed by the cluster's CA."""
    authority = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)]))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return {
        "client-certificate-data": base64.b64encode(
            certificate.public_bytes(serialization.Encoding.PEM)
        ).decode(),
        "client-key-data": base64.b64encode(pem_key).decode(),
    }


async def test_a_user_without_rbac_is_exit_5(local_cluster: LocalCluster, tmp_path: Path) -> None:
    ca_cert = local_cluster.ca_file
    user = client_certificate(ca_cert, ca_cert.with_name("ca.key"), "nobody-at-all")
    config = two_contexts(local_cluster, tmp_path / "config", user=user)
    code, out, err = await cli("tree", "-A", "--kubeconfig", config, "--context", CONTEXT)
    assert (code, out) == (errors.EXIT_FORBIDDEN, ""), err
    assert err.startswith(
        "error: cannot read the cluster: 403 Forbidden listing "
        "elasticquotas.scheduling.sigs.k8s.io: "
    )
    assert 'User "nobody-at-all" cannot list resource "elasticquotas"' in err  # the server's
    assert err.count("\n") == 1
