"""The local control plane's command lines, kubeconfig and ports: pure helpers of ``LocalCluster``.

Each builds what one component is started with (etcd, kube-apiserver, kube-controller-manager) or
what the cluster hands its users (the kubeconfig), from the ports and the PKI it is given; nothing
here starts a process.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqdev.cluster.pki import Pki

LOOPBACK = "127.0.0.1"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc"
ENABLED_ADMISSION = ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
DISABLED_ADMISSION = ("ServiceAccount",)
CONTEXT_NAME = "elastic-quota-local"


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
