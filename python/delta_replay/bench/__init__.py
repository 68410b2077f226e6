"""Benchmarks: each module registers its ``delta-replay bench`` commands."""
