"""YuniKorn's worked examples of user limits, shared by the book and the ledger tests."""

from __future__ import annotations

#: The "seed" example of YuniKorn's documentation: sue, the development and test groups, and the
#: catch-alls for every other user and group.
SEED = """
- limit: "specific user"
  users: ["sue"]
  maxresources: {memory: 25G, vcore: 5}
- limit: "specific groups"
  groups: ["development", "test"]
  maxresources: {memory: 100G, vcore: 10}
- limit: "user catch all"
  users: ["*"]
  maxresources: {memory: 10G, vcore: 1}
- limit: "group catch all"
  groups: ["*"]
  maxresources: {memory: 50G, vcore: 10}
"""
