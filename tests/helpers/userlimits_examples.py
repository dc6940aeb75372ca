"""YuniKorn's worked examples of user limits, shared by the book and the ledger tests (in YuniKorn's
decimal units) and the ``plan`` tests (in binary units, for round figures in the output)."""

from __future__ import annotations


def seed_limits(memory_unit: str) -> str:
    """The "seed" example of YuniKorn's documentation (seed 004's design example): sue 25 / 5 cpu;
    the development and test groups 100 / 10 each; every other user 10 / 1; all other groups
    together 50 / 10; memory in ``memory_unit`` (``G`` as YuniKorn writes it, or ``Gi``)."""
    return f"""
- limit: "specific user"
  users: ["sue"]
  maxresources: {{memory: 25{memory_unit}, vcore: 5}}
- limit: "specific groups"
  groups: ["development", "test"]
  maxresources: {{memory: 100{memory_unit}, vcore: 10}}
- limit: "user catch all"
  users: ["*"]
  maxresources: {{memory: 10{memory_unit}, vcore: 1}}
- limit: "group catch all"
  groups: ["*"]
  maxresources: {{memory: 50{memory_unit}, vcore: 10}}
"""


#: The seed example as YuniKorn writes it.
SEED = seed_limits("G")
