"""delta-replay-bench: the workload drivers and benchmarks of delta-replay.

Installed beside the ``delta_replay`` library, its commands join the ``delta-replay``
command line through the ``delta_replay.commands`` entry-point group (see
``pyproject.toml``): ``delta-replay demo kafka-merge | merge-optimize | mor`` and
``delta-replay bench replay | streams | mor``.

Subpackages: ``replay`` (log-replay and planning benchmark) with ``synth`` (synthetic
tables of N files), ``streams`` (many parallel rate streams), ``kafka`` (Kafka -> Delta
streaming MERGE), ``merge_optimize`` (streaming MERGE beside OPTIMIZE), ``mor``
(Merge-on-Read).
"""

from __future__ import annotations

__all__: list[str] = []
