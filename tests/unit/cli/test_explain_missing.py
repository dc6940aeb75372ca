"""``explain`` of a pod it cannot explain says why: the problems that kept the pod out, or that no
such pod exists, naming the pods of that name in other namespaces (a forgotten ``-n``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from elasticquota.cli import main
from elasticquota.cli.errors import EXIT_NOT_FOUND

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def explained(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["explain", *argv])
    return code, capsys.readouterr().err


def test_a_pod_of_that_name_elsewhere_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, error = explained(capsys, "report-3", "-f", str(EXAMPLES))
    assert code == EXIT_NOT_FOUND
    assert (
        error == "error: pod default/report-3 not found; pods named report-3: analytics/report-3\n"
    )


def test_many_namesakes_are_counted_after_the_first_three(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": f"ns{i}"}}
        for i in range(5)
    ]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    code, error = explained(capsys, "web", "-f", str(tmp_path))
    assert code == EXIT_NOT_FOUND
    namesakes = "ns0/web, ns1/web, ns2/web and 2 more"
    assert error == f"error: pod default/web not found; pods named web: {namesakes}\n"


def test_no_such_pod_anywhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert explained(capsys, "nobody/nothing", "-f", str(EXAMPLES)) == (
        EXIT_NOT_FOUND,
        "error: pod nobody/nothing not found\n",
    )


def test_a_pod_left_out_by_its_problems_names_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "lots"}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bad", "namespace": "team"},
        "spec": {"containers": [container]},
    }
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    code, error = explained(capsys, "team/bad", "-f", str(tmp_path))
    assert code == EXIT_NOT_FOUND
    assert error == (
        "error: pod team/bad cannot be explained: resources: container 'c' cpu: quantity 'lots' "
        "is not a valid Kubernetes quantity; the pod is not accounted\n"
    )
