"""Priority messages through the Python RocketMQ 5 gRPC client (rocketmq-python-client 5.1.2,
unmodified), run as its own process by ``compat_tests/test_grpc55_compat.py``: a Producer
sends one message per given priority (bodies ``m0``, ``m1``, ...), then a SimpleConsumer receives
and acknowledges them all.

Prints ``SENT <body> <priority>`` per send, ``RECEIVED <body> <priority>`` in the order received
(each followed by ``TYPE <body> <message type number>``),
``RETRY <error>`` (a receive failed, tried again), ``FAILED <error>``, ``DONE``.

    python -m compat_tests.grpc_python_priority ENDPOINT TOPIC GROUP PRIORITY...
"""

from __future__ import annotations

import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

RECEIVE_BATCH = 32
DEADLINE_S = 60.0


def send_all(configuration: ClientConfiguration, topic: str, priorities: list[int]) -> None:
    producer = Producer(configuration, (topic,))
    producer.startup()
    try:
        for index, priority in enumerate(priorities):
            message = Message()
            message.topic = topic
            message.body = f"m{index}".encode()
            message.priority = priority
            producer.send(message)
            print(f"SENT m{index} {priority}", flush=True)
    finally:
        producer.shutdown()


def receive_all(configuration: ClientConfiguration, topic: str, group: str, count: int) -> None:
    consumer = SimpleConsumer(configuration, group, {topic: FilterExpression()}, await_duration=5)
    consumer.startup()
    deadline = time.monotonic() + DEADLINE_S
    received = 0
    try:
        while received < count and time.monotonic() < deadline:
            try:
                messages = consumer.receive(RECEIVE_BATCH, 30)
            except Exception as err:  # settings not yet at the Proxy: an application retries
                print(f"RETRY {type(err).__name__} {err}".replace("\n", " ")[:200], flush=True)
                time.sleep(0.5)
                continue
            for message in messages:
                print(f"RECEIVED {message.body.decode()} {message.priority}", flush=True)
                print(f"TYPE {message.body.decode()} {message.message_type}", flush=True)
                consumer.ack(message)
                received += 1
    finally:
        consumer.shutdown()


def main(endpoint: str, topic: str, group: str, priorities: list[int]) -> None:
    configuration = ClientConfiguration(endpoint, Credentials("", ""), request_timeout=10)
    try:
        send_all(configuration, topic, priorities)
        receive_all(configuration, topic, group, len(priorities))
    except Exception as err:  # the client raises its own exception types and plain ones alike
        print(f"FAILED {type(err).__name__} {err}".replace("\n", " "), flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4:]])
