"""Spark reader benchmark (``python -m bench.spark``): ``format("rocketmq")`` against a raw read.

:mod:`bench.spark.store` builds the store, :mod:`bench.spark.cases` measures, :mod:`bench.spark.report`
writes ``bench/results/spark-<date>.json`` and ``.md``; ``docs/spark.md`` shows the figures.
"""
