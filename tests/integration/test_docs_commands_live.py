"""The docs' example commands that read a cluster run as shown, with the output shown.

The blocks marked ``<!-- docs-test: cluster -->`` in README.md and docs/*.md (docs/development.md,
"Commands in the docs") run against a control plane of this module's own (the session's is shared
with tests that leave their quotas behind, and ``kubectl get eq -A`` shows every namespace): the
CRDs and ``examples/`` applied, the operator run until every quota holds what ``plan`` computes,
then stopped, so that the figures stand still while the commands read them. The examples are
applied as examples/README.md tells a user to (``kubectl apply -f examples/``: pods stay
``Pending``, the bound ones count as used), so the figures the docs show are those a user sees.
kubectl is the machine's, as for tests/integration/test_chart_*.py: the short names ``eq``/``eqp``
are resolved by its discovery of the CRDs, as a user's kubectl does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import harness
import pytest
from docs_commands import Block, check, command_blocks, environment, write_scripts
from kubernetes_asyncio import client

from elasticquota.kube.client import make_api_client
from eqdev.cluster import LocalCluster, apply_crds_sync

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER_BLOCKS = [block for block in command_blocks() if block.marker == "cluster"]


def apply_examples() -> None:
    """``kubectl apply -f examples/``, which must create every object (exit 0)."""
    applied = subprocess.run(
        ["kubectl", "apply", "-f", str(EXAMPLES)], capture_output=True, text=True, check=False
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr


async def examples_written(operator: harness.OperatorProcess) -> None:
    api: client.ApiClient = await make_api_client()
    try:
        await harness.until_converged(api, 60, operator, "the examples' figures written")
    finally:
        await api.close()


@pytest.fixture(scope="module")
def example_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The commands' environment: KUBECONFIG of a cluster holding the examples as the operator
    wrote them."""
    cluster = LocalCluster()
    previous = os.environ.get("KUBECONFIG")
    operator: harness.OperatorProcess | None = None
    try:
        cluster.start()
        apply_crds_sync(cluster.kubeconfig, CRD_DIR)
        os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
        operator = harness.OperatorProcess("docs").start()
        apply_examples()
        asyncio.run(examples_written(operator))
        operator.stop()
        scripts = tmp_path_factory.mktemp("bin")
        yield environment(write_scripts(scripts), KUBECONFIG=str(cluster.kubeconfig))
    finally:
        if operator is not None:
            operator.stop()
        if previous is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = previous
        cluster.stop()


def test_kubectl_is_on_the_path() -> None:
    """The cluster blocks run kubectl: a machine without it fails here, never skips them."""
    assert shutil.which("kubectl"), "kubectl not found on PATH (Debian: kubernetes-client)"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", CLUSTER_BLOCKS, ids=[block.where for block in CLUSTER_BLOCKS])
def test_the_command_prints_what_the_docs_show(
    block: Block, example_cluster: dict[str, str]
) -> None:
    failures = check(block, example_cluster)
    assert not failures, "\n\n".join(failures)
