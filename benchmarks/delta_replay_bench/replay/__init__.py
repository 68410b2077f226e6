"""``delta-replay bench replay``: log replay and planning cost of every reader.

Modules: ``bench`` (the command's runner and its entry point), ``cli`` (its command line),
``readers`` (the readers compared), ``layouts`` (the layout matrix), ``measure`` (one reader on
one table), ``jvm`` (JVM-side probes), ``store`` (the object store), ``processes`` and
``worker`` (one measurement in a fresh process), ``rows``, ``report``, ``report_layouts``,
``report_store`` and ``plotting`` (the report). The tables, synthetic and real, come from
:mod:`delta_replay_bench.synth`, which imports nothing from here.
"""
