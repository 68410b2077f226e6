"""``delta-replay bench replay``: log replay and planning cost of every reader.

Modules: ``bench`` (the command and its runner), ``readers`` (the readers compared),
``measure`` (one reader on one table), ``jvm`` (JVM-side probes), ``tables`` (real
delta-spark tables), ``worker`` (one measurement in a fresh process), ``report``.
"""
