"""The Python RocketMQ 5 gRPC PushConsumer (rocketmq-python-client 5.1.2, unmodified) as an
application uses it, run as its own process by ``compat_tests/test_grpc_consume_compat.py`` (the
client's generated apache.rocketmq.v2 classes cannot share a descriptor pool with ours).

Its listener answers FAILURE for the first delivery of the first message it sees and SUCCESS for
everything else, so the client's own retry (a change of invisible duration by the group's backoff
policy) is exercised too. Prints one line per outcome: ``STARTED``, ``RECEIVED <body> <delivery
attempt> <SUCCESS|FAILURE>``, ``START_FAILED <error>``, ``DONE`` once COUNT bodies were consumed
successfully or SECONDS passed; spaces in bodies are written as ``_``.

    python -m compat_tests.grpc_python_push_consumer ENDPOINT TOPIC GROUP COUNT SECONDS
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
        self.failed: str | None = None
        self.succeeded: set[str] = set()

    def consume(self, message) -> ConsumeResult:  # type: ignore[no-untyped-def]
        body = message.body.decode().replace(" ", "_")
        with self.lock:
            if self.failed is None:
                self.failed = body
                result = ConsumeResult.FAILURE
            else:
                result = ConsumeResult.SUCCESS
                self.succeeded.add(body)
            # several consuming threads: one whole line at a time, under the lock
            sys.stdout.write(f"RECEIVED {body} {message.delivery_attempt} {result.name}\n")
            sys.stdout.flush()
        return result


def main(endpoint: str, topic: str, group: str, count: int, seconds: float) -> None:
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
            if len(listener.succeeded) >= count:
                break
        time.sleep(0.1)
    consumer.shutdown()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
