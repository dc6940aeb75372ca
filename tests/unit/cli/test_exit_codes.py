"""Every documented error of the CLI through its real entry point: one line on stderr, its exit
code (docs/cli.md, README), no traceback; the kubeconfig's errors before any connection, an
unreachable or silent server within the connect bound, 401/403 and other statuses apart.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run import (
    EXAMPLES,
    QUOTAS_PATH,
    REPO,
    ApiServerStub,
    environment,
    kubeconfig,
    quota_list,
    run,
    status,
)
from ports import free_port

from elasticquota.cli import errors

pytestmark = pytest.mark.timeout(300)

#: One invocation of each command that reads a cluster.
CLUSTER_COMMANDS = (["tree"], ["explain", "team/pod"], ["usage", "users"])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    return free_port()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port whose listener never accepts: TCP connects (the kernel's backlog), TLS never
    answers, as a server behind a black-holing firewall or a frozen one."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@pytest.mark.parametrize("command", CLUSTER_COMMANDS, ids=lambda c: c[0])
def test_a_missing_kubeconfig_file_is_exit_3(command: list[str], tmp_path: Path) -> None:
    result = run(*command, "--kubeconfig", tmp_path / "nope")
    assert result.code == errors.EXIT_KUBECONFIG
    assert result.one_line_error() == f"error: kubeconfig {tmp_path / 'nope'}: no such file"


def test_no_kubeconfig_at_all_outside_a_pod_is_exit_3(tmp_path: Path) -> None:
    result = run("tree", env=environment(home=tmp_path))
    assert result.code == errors.EXIT_KUBECONFIG
    assert "no kubeconfig" in result.one_line_error()


@pytest.mark.parametrize(
    "text", ["clusters: [unclosed\n", "just a string\n", "contexts: 3\n"], ids=str.strip
)
def test_an_invalid_kubeconfig_is_exit_3(text: str, tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(text, encoding="utf-8")
    result = run("tree", "--kubeconfig", path)
    assert result.code == errors.EXIT_KUBECONFIG
    assert result.one_line_error().startswith(f"error: kubeconfig {path}: ")


def test_a_context_whose_cluster_is_missing_is_exit_3(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        "current-context: c\nclusters: []\nusers: []\n"
        "contexts: [{name: c, context: {cluster: gone, user: nobody}}]\n",
        encoding="utf-8",
    )
    result = run("tree", "--kubeconfig", path)
    assert result.code == errors.EXIT_KUBECONFIG
    assert result.one_line_error().startswith("error: invalid kubeconfig: ")


@pytest.mark.parametrize("command", CLUSTER_COMMANDS, ids=lambda c: c[0])
def test_an_unknown_context_is_exit_3_and_lists_the_known_ones(
    command: list[str], tmp_path: Path, closed_port: int
) -> None:
    path = kubeconfig(
        tmp_path / "config", {"one": f"https://127.0.0.1:{closed_port}", "two": "https://x:1"}
    )
    result = run(*command, "--kubeconfig", path, "--context", "three")
    assert result.code == errors.EXIT_KUBECONFIG
    assert result.one_line_error() == (
        f'error: kubeconfig {path}: no context "three" (contexts: one, two)'
    )


@pytest.mark.parametrize("command", CLUSTER_COMMANDS, ids=lambda c: c[0])
def test_a_closed_port_is_exit_4(command: list[str], tmp_path: Path, closed_port: int) -> None:
    path = kubeconfig(tmp_path / "config", {"c": f"https://127.0.0.1:{closed_port}"})
    result = run(*command, "--kubeconfig", path)
    assert result.code == errors.EXIT_UNREACHABLE
    assert result.one_line_error().startswith("error: cannot reach the API server: ")


def test_the_context_chooses_the_server(tmp_path: Path, closed_port: int) -> None:
    """The current context is a closed port; --context names one that answers."""
    with ApiServerStub(200, quota_list()) as url:
        path = kubeconfig(
            tmp_path / "config",
            {"closed": f"https://127.0.0.1:{closed_port}", "open": url},
            current="closed",
        )
        assert run("tree", "--kubeconfig", path, "-A").code == errors.EXIT_UNREACHABLE
        result = run("tree", "--kubeconfig", path, "--context", "open", "-A", "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["quotas"] == {}


def test_a_server_that_never_answers_is_exit_4_after_the_connect_bound(
    tmp_path: Path, silent_server: int
) -> None:
    path = kubeconfig(tmp_path / "config", {"c": f"https://127.0.0.1:{silent_server}"})
    result = run("tree", "--kubeconfig", path, timeout=60)  # the bound: 5 s, not minutes
    assert result.code == errors.EXIT_UNREACHABLE
    assert "no answer within 5s (connect)" in result.one_line_error()


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [(401, errors.EXIT_FORBIDDEN), (403, errors.EXIT_FORBIDDEN), (500, errors.EXIT_API)],
)
@pytest.mark.parametrize("command", CLUSTER_COMMANDS, ids=lambda c: c[0])
def test_error_statuses_have_their_codes(
    command: list[str], code: int, exit_code: int, tmp_path: Path
) -> None:
    with ApiServerStub(code, status(code, "Forbidden" if code == 403 else "Failure")) as url:
        result = run(*command, "--kubeconfig", kubeconfig(tmp_path / "config", {"c": url}))
    assert result.code == exit_code
    assert result.one_line_error().startswith(f"error: cannot read the cluster: {code} ")


def test_an_unexpected_error_is_one_line_and_70_and_debug_shows_the_traceback(
    tmp_path: Path,
) -> None:
    """An API server that answers a list with something that is not an object list: not a case
    the CLI knows, so the last resort of main."""
    with ApiServerStub(200, b"not json") as url:
        path = kubeconfig(tmp_path / "config", {"c": url})
        result = run("tree", "--kubeconfig", path)
        debugged = run("tree", "--kubeconfig", path, "--debug")
    assert result.code == errors.EXIT_INTERNAL
    assert re.fullmatch(
        r"error: unexpected \w+: .* \(a bug: rerun with --debug for the traceback and report it\)",
        result.one_line_error(),
    )
    assert debugged.code == errors.EXIT_INTERNAL
    assert debugged.err.startswith("Traceback (most recent call last):")
    assert debugged.err.splitlines()[-1] == result.err.strip()


def test_an_unknown_pod_is_exit_1(tmp_path: Path) -> None:
    result = run("explain", "nobody/nothing", "-f", EXAMPLES)
    assert result.code == errors.EXIT_NOT_FOUND
    assert result.one_line_error().startswith("error: pod nobody/nothing not found")


def test_an_unknown_quota_is_exit_1(tmp_path: Path) -> None:
    team = {"metadata": {"name": "team", "namespace": "team"}, "spec": {}}
    with ApiServerStub(200, {}, paths={QUOTAS_PATH: (200, quota_list(team))}) as url:
        path = kubeconfig(tmp_path / "config", {"c": url}, namespaces={"c": "team"})
        missing = run("tree", "nosuch", "--kubeconfig", path)
        elsewhere = run("tree", "team", "--kubeconfig", path, "-n", "other")
        found = run("tree", "team", "--kubeconfig", path, "-o", "json")
    assert missing.code == errors.EXIT_NOT_FOUND
    assert missing.one_line_error() == (
        "error: quota nosuch not found in namespace team (-A: every namespace)"
    )
    assert elsewhere.code == errors.EXIT_NOT_FOUND
    assert found.code == 0, found.err
    assert list(found.json()["quotas"]) == ["team"]


@pytest.mark.parametrize(
    "command", [["plan"], ["explain", "a/b"], ["usage", "users"]], ids=lambda c: c[0]
)
def test_an_unreadable_file_is_exit_2(command: list[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed\n", encoding="utf-8")
    result = run(*command, "-f", broken)
    assert result.code == errors.EXIT_USAGE
    assert result.one_line_error().startswith(f"error: {broken}: not valid YAML")


def test_a_usage_error_is_exit_2() -> None:
    result = run("tree", "-o", "xml")
    assert result.code == errors.EXIT_USAGE
    assert "invalid choice: 'xml'" in result.err and "Traceback" not in result.err


def documented_codes(text: str, heading: str) -> list[int]:
    """The first column of the first table after ``heading`` whose header starts with
    ``| code |``."""
    rest = text[text.index(heading) :]
    table = rest[rest.index("| code |") :]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(int(line.split("|")[1]))
    return rows


def test_the_exit_code_tables_are_the_codes_of_the_program() -> None:
    codes = sorted({value for name, value in vars(errors).items() if name.startswith("EXIT_")})
    docs = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert documented_codes(docs, "## Errors and exit codes") == codes
    assert documented_codes(readme, "### The command-line tool") == codes
