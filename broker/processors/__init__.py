"""Request processors of the broker, one module per Java processor."""
