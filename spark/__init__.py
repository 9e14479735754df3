"""PySpark 4.x readers of RocketMQ broker storage (``pip install .[spark]``).

``spark.register(session)`` registers ``format("rocketmq")`` (messages, batch and streaming,
:mod:`spark.source`) and ``format("rocketmq.offsets")`` (consumer offsets and lag,
:mod:`spark.offsets`). Reading is read-only and needs no broker; with option ``namesrvAddr`` both
read a running cluster instead (:mod:`spark.network`). See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(session: SparkSession) -> None:
    """Register both data sources with ``session`` (once per session)."""
    from spark.offsets import RocketMQOffsetsDataSource
    from spark.source import RocketMQDataSource

    session.dataSource.register(RocketMQDataSource)
    session.dataSource.register(RocketMQOffsetsDataSource)
