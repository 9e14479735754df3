"""``python -m bench.pop``: POP + ack against PULL with offset commit, ours beside the real 5.3.3
broker, and (``--revive``) how late an unacknowledged message becomes poppable again."""
