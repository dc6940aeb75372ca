"""A taken port for the probes and metrics, or for the webhooks: the operator says so and which
setting to change, and exits with the settings' code (2), not as a bug; the harness then starts it
again elsewhere.

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


@pytest.mark.parametrize(
    ("attribute", "server", "address"),
    [("port", "metrics", "metrics_address"), ("webhook_port", "webhook", "webhook_address")],
)
def test_a_taken_port_names_its_settings_and_the_operator_exits_2(
    taken: int, attribute: str, server: str, address: str
) -> None:
    """The probes' server binds before anything starts; Kopf's webhook server once the readers
    and the Lease run, and the operator stops then: both say the same."""
    operator = OperatorProcess(f"{server}-port-taken", "--webhook-configuration", "", webhooks=True)
    setattr(operator, attribute, taken)
    operator.start()
    assert operator.process is not None
    try:
        code = operator.process.wait(timeout=120)
    finally:
        operator.kill()
    assert code == EXIT_BAD_SETTINGS, operator.output()
    assert (
        f"error: invalid settings: {server}_port = {taken} (from --{server}-port), "
        f"{address} = '0.0.0.0': cannot listen on 0.0.0.0:{taken}: {PORT_TAKEN}"
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
