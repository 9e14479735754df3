"""The Python RocketMQ 5 gRPC PushConsumer (rocketmq-python-client 5.1.2, unmodified) that reports
every delivery with its message id, run as its own process by
``compat_tests/test_grpc_faults_compat.py``. Every delivery is consumed successfully.

Prints ``STARTED``, then ``RECEIVED <message id> <body>`` per delivery, ``START_FAILED <error>``,
and ``DONE`` once TOTAL deliveries were seen or SECONDS passed.

    python -m compat_tests.grpc_python_msgid_consumer ENDPOINT TOPIC GROUP TOTAL SECONDS
"""

from __future__ import annotations

import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    MessageListener,
    PushConsumer,
)


class Listener(MessageListener):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen = 0

    def consume(self, message) -> ConsumeResult:  # type: ignore[no-untyped-def]
        # The client consumes on several threads: one whole line at a time under the lock, or two
        # deliveries' lines can interleave into one.
        with self.lock:
            self.seen += 1
            sys.stdout.write(f"RECEIVED {message.message_id} {message.body.decode()}\n")
            sys.stdout.flush()
        return ConsumeResult.SUCCESS


def main(endpoint: str, topic: str, group: str, total: int, seconds: float) -> None:
    listener = Listener()
    configuration = ClientConfiguration(endpoint, Credentials(), request_timeout=10)
    consumer = PushConsumer(configuration, group, listener, {topic: FilterExpression()})
    try:
        consumer.startup()
    except Exception as err:  # the client raises its own exception types and plain ones alike
        print(f"START_FAILED {type(err).__name__} {err}".replace("\n", " "), flush=True)
        return
    print("STARTED", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with listener.lock:
            if listener.seen >= total:
                break
        time.sleep(0.1)
    consumer.shutdown()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
