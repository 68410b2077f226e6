"""``delta-replay bench streams``: many rate-source streams into Delta on a phased schedule.

Modules: ``bench`` (the command), ``schedule`` (phases), ``driver`` (runs the queries and
records every batch), ``measure`` (pure-Python measures), ``report``.
"""
