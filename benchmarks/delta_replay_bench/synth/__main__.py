"""``python -m delta_replay_bench.synth``: :func:`~.generator.main`."""

import sys

from .generator import main

if __name__ == "__main__":
    sys.exit(main())
