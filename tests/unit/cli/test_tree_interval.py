"""``tree --watch --interval S``: seconds above 0; 0, a negative number or nan is a usage error
(exit 2), never a watch that lists every quota of the cluster back to back."""

from __future__ import annotations

import pytest

from elasticquota.cli import parser
from elasticquota.cli.errors import EXIT_USAGE


@pytest.mark.parametrize("interval", ["0", "-1", "nan", "inf", "soon"])
def test_an_interval_not_above_0_is_a_usage_error(
    interval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["tree", "--watch", "--interval", interval])
    assert exited.value.code == EXIT_USAGE
    assert "argument --interval: not a number of seconds above 0" in capsys.readouterr().err


def test_a_fraction_of_a_second_is_an_interval() -> None:
    assert parser().parse_args(["tree", "-w", "--interval", "0.5"]).interval == 0.5
