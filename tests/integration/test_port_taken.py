"""A taken port for the probes and metrics: the operator says so and which setting to change, and
exits with the settings' code (2), not as a bug; the harness then starts it again elsewhere.

``free_port`` releases the port it finds, so another socket of the machine (a server binding
port 0, a connection's local port) may get it before the operator binds it: the harness's
operator starts again on another port when it exits saying so.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from harness import PORT_TAKEN, OperatorProcess

pytestmark = pytest.mark.timeout(180)

EXIT_BAD_SETTINGS = 2


@pytest.fixture
def taken() -> Iterator[int]:
    """A port something else listens on, on every interface (where the operator listens)."""
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_the_operator_names_the_setting_of_a_taken_port_and_exits_2(taken: int) -> None:
    operator = OperatorProcess("port-taken-exit")
    operator.port = taken
    operator.start()
    assert operator.process is not None
    try:
        code = operator.process.wait(timeout=120)
    finally:
        operator.kill()
    assert code == EXIT_BAD_SETTINGS, operator.output()
    assert (
        f"error: invalid settings: metrics_port = {taken} (from --metrics-port), "
        f"metrics_address = '0.0.0.0': cannot listen on 0.0.0.0:{taken}: {PORT_TAKEN}"
    ) in operator.output()
    assert "a bug" not in operator.output()


async def test_the_harness_starts_an_operator_whose_port_was_taken_again_elsewhere(
    taken: int,
) -> None:
    operator = OperatorProcess("port-taken-again")
    operator.port = taken
    operator.start()
    try:
        await operator.wait_ready()  # the first start exits: the port is taken
    finally:
        operator.stop()
    # Started again only on PORT_TAKEN in its output, on a port of its own.
    assert operator.port != taken
