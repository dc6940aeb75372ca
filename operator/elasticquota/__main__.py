"""``python -m elasticquota`` is the ``elastic-quota`` command."""

import sys

from elasticquota.cli import main

sys.exit(main())
