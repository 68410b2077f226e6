"""``python -m delta_replay``: the ``delta-replay`` command line."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
