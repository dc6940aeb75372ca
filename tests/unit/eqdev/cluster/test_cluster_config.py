"""LocalCluster's pure parts: ports, kubeconfig, command lines, CRD loading, unstarted state."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest

from eqdev.cluster.cluster import ClusterError, LocalCluster
from eqdev.cluster.commands import (
    apiserver_args,
    controller_manager_args,
    etcd_args,
    free_ports,
    kubeconfig_document,
)
from eqdev.cluster.crds import default_crd_dir, load_crds
from eqdev.cluster.pki import Pki

PKI = Pki(
    directory=Path("/run/pki"),
    ca_cert=Path("/run/pki/ca.crt"),
    ca_key=Path("/run/pki/ca.key"),
    serving_cert=Path("/run/pki/apiserver.crt"),
    serving_key=Path("/run/pki/apiserver.key"),
    service_account_key=Path("/run/pki/sa.key"),
    service_account_pub=Path("/run/pki/sa.pub"),
    token_file=Path("/run/pki/tokens.csv"),
    token="t0k3n",
)


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_kubeconfig_document() -> None:
    document = kubeconfig_document("https://127.0.0.1:1234", b"PEM", "t0k3n")
    cluster = document["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:1234"
    assert base64.b64decode(cluster["certificate-authority-data"]) == b"PEM"
    assert document["users"][0]["user"] == {"token": "t0k3n"}
    assert document["current-context"] == document["contexts"][0]["name"]


def test_etcd_args() -> None:
    args = etcd_args(Path("/bin/etcd"), Path("/run/etcd"), 2379, 2380)
    assert args[0] == "/bin/etcd"
    assert "--listen-client-urls=http://127.0.0.1:2379" in args
    assert "--initial-cluster=default=http://127.0.0.1:2380" in args
    assert "--unsafe-no-fsync" in args


def test_apiserver_args() -> None:
    args = apiserver_args(Path("/bin/kube-apiserver"), PKI, 2379, 6443, Path("/run/certs"))
    for flag in (
        "--etcd-servers=http://127.0.0.1:2379",
        "--bind-address=127.0.0.1",
        "--secure-port=6443",
        "--insecure-port=0",
        "--authorization-mode=RBAC",
        "--endpoint-reconciler-type=none",
        "--disable-admission-plugins=ServiceAccount",
        "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
        "--token-auth-file=/run/pki/tokens.csv",
        "--service-account-issuer=https://kubernetes.default.svc",
        "--service-account-key-file=/run/pki/sa.pub",
        "--service-account-signing-key-file=/run/pki/sa.key",
        "--service-cluster-ip-range=10.0.0.0/24",
    ):
        assert flag in args


def test_controller_manager_args() -> None:
    args = controller_manager_args(
        Path("/bin/kcm"), Path("/run/kubeconfig"), PKI, ["*", "-serviceaccount-token"]
    )
    assert "--kubeconfig=/run/kubeconfig" in args
    assert "--leader-elect=false" in args
    assert "--secure-port=0" in args
    assert "--controllers=*,-serviceaccount-token" in args
    assert "--root-ca-file=/run/pki/ca.crt" in args


def test_load_crds_from_the_repository() -> None:
    names = {crd["metadata"]["name"] for crd in load_crds(default_crd_dir())}
    assert {
        "elasticquotas.scheduling.sigs.k8s.io",
        "elasticquotaprofiles.quota.koordinator.sh",
    } <= names


def test_load_crds_without_any(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n---\n")
    with pytest.raises(ClusterError, match="no CustomResourceDefinition"):
        load_crds(tmp_path)


def test_unstarted_cluster() -> None:
    cluster = LocalCluster()
    with pytest.raises(ClusterError, match="start"):
        _ = cluster.server
    assert cluster.pids == {}
    assert not cluster.running
    cluster.stop()  # stopping a cluster that never started is harmless
    cluster.check()
