"""The Python RocketMQ 5 gRPC SimpleConsumer (rocketmq-python-client 5.1.2, unmodified) as an
application uses it, run as its own process by ``compat_tests/test_grpc_consume_compat.py`` (the
client's generated apache.rocketmq.v2 classes cannot share a descriptor pool with ours).

Prints one line per outcome, as ``rmqgrpc.Consume`` does: ``STARTED``, ``RECEIVED <body>
<delivery attempt>``, ``ACKED <body>``, ``RETRY <error>`` (a receive failed, tried again),
``EMPTY`` (one more receive found nothing), ``FAILED <error>``, ``START_FAILED <error>``,
``DONE``; spaces in bodies are written as ``_``. With ``RMQ_SHOW_TOPIC=1`` each received message
is followed by ``TOPIC <resource namespace, or -> <topic name>``, as the client sees them.

    RMQ_ACCESS_KEY=ak RMQ_SECRET_KEY=sk \
        python -m compat_tests.grpc_python_consumer ENDPOINT TOPIC GROUP COUNT SECONDS
"""

from __future__ import annotations

import os
import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer


def credentials() -> Credentials:
    """``SessionCredentials`` from ``RMQ_ACCESS_KEY`` / ``RMQ_SECRET_KEY`` (none when unset)."""
    return Credentials(os.environ.get("RMQ_ACCESS_KEY", ""), os.environ.get("RMQ_SECRET_KEY", ""))


def main(endpoint: str, topic: str, group: str, count: int, seconds: float) -> None:
    configuration = ClientConfiguration(endpoint, credentials(), request_timeout=10)
    consumer = SimpleConsumer(configuration, group, {topic: FilterExpression()}, await_duration=5)
    try:
        consumer.startup()
    except Exception as err:  # the client raises its own exception types and plain ones alike
        print(f"START_FAILED {type(err).__name__} {err}".replace("\n", " "), flush=True)
        return
    print("STARTED", flush=True)
    deadline = time.monotonic() + seconds
    acked = 0
    try:
        while acked < count and time.monotonic() < deadline:
            try:
                messages = consumer.receive(16, 15)
            except Exception as err:
                # The client starts receiving before its settings reached the server; the real
                # Proxy then fails the receive (ReceiveMessageActivity: settings is null). An
                # application retries; so does this, until the deadline.
                print(f"RETRY {type(err).__name__} {err}".replace("\n", " ")[:200], flush=True)
                time.sleep(0.5)
                continue
            for message in messages:
                body = message.body.decode().replace(" ", "_")
                print(f"RECEIVED {body} {message.delivery_attempt}", flush=True)
                if os.environ.get("RMQ_SHOW_TOPIC") == "1":
                    print(f"TOPIC {message.namespace or '-'} {message.topic}", flush=True)
                consumer.ack(message)
                acked += 1
                print(f"ACKED {body}", flush=True)
        if not consumer.receive(16, 15):
            print("EMPTY", flush=True)
    except Exception as err:
        print(f"FAILED {type(err).__name__} {err}".replace("\n", " "), flush=True)
    finally:
        consumer.shutdown()
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
