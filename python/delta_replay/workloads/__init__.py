"""Workload drivers: each module registers its ``delta-replay demo``/``bench`` commands."""
