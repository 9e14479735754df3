"""Example Spark jobs over RocketMQ store directories (``python -m spark.examples.<job> ...``)."""
