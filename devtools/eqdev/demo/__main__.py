"""``python -m eqdev.demo``: the demo (``make run``); ``--help`` lists its options."""

from __future__ import annotations

import sys

from eqdev.demo.command import main

if __name__ == "__main__":
    sys.exit(main())
