"""Codec micro-benchmarks: ``python -m bench.codec``."""
