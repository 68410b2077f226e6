"""``delta-replay demo merge-optimize``: streaming MERGE and OPTIMIZE in parallel.

Modules: ``workload`` (the command), ``data`` (generator, catalogue, checks), ``driver``
(the concurrent writers), ``report`` (summary, timeline plot).
"""
