"""``delta-replay bench replay``: log replay and planning cost of every reader.

Modules: ``bench`` (the command's runner), ``cli`` (its command line), ``readers`` (the
readers compared), ``measure`` (one reader on one table), ``jvm`` (JVM-side probes),
``tables`` (real delta-spark tables), ``worker`` (one measurement in a fresh process),
``report``.
"""
