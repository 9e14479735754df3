"""Lite topics through the Python RocketMQ 5 gRPC client (rocketmq-python-client 5.1.2,
unmodified), run as its own process by ``compat_tests/test_grpc55_compat.py``.

``push``: a LitePushConsumer of GROUP bound to TOPIC subscribes to the lite topics ``l0`` and
``l1``; a Producer sends ROUNDS messages to each of ``l0`` .. ``l3`` (bodies ``<lite>-<round>``,
round by round); once the consumer has the 2 * ROUNDS messages of its lite topics, it
unsubscribes ``l1`` and the producer sends ``l1-after`` then ``l0-after``; the run ends when
``l0-after`` is in (or at the deadline).

``simple``: a LiteSimpleConsumer subscribes to ``l0``, the producer sends ROUNDS messages to
``l0`` and ``l1``, and the consumer receives and acknowledges until it has ROUNDS (or the
deadline).

Prints ``RECEIVED <lite topic> <body>`` per message in the order the listener or receive saw them,
``SUBSCRIBED``, ``UNSUBSCRIBED``, ``RETRY <error>`` (a receive failed, tried again),
``FAILED <error>``, ``DONE``.

    python -m compat_tests.grpc_python_lite push|simple ENDPOINT TOPIC GROUP ROUNDS
"""

from __future__ import annotations

import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    LitePushConsumer,
    LiteSimpleConsumer,
    Message,
    MessageListener,
    Producer,
)

DEADLINE_S = 90.0  # past the client's first full subscription sync (30 s)
POLL_S = 0.2
LITE_TOPICS = ("l0", "l1", "l2", "l3")


def line(text: str) -> None:
    print(text.replace("\n", " "), flush=True)


def send(producer: Producer, topic: str, lite: str, body: str) -> None:
    message = Message()
    message.topic = topic
    message.body = body.encode()
    message.lite_topic = lite
    producer.send(message)


class Collector(MessageListener):
    """The listener: one printed line per message, the bodies kept for the waits."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[str] = []

    def consume(self, message: Message) -> ConsumeResult:
        with self.lock:
            self.bodies.append(message.body.decode())
            line(f"RECEIVED {message.lite_topic} {message.body.decode()}")
        return ConsumeResult.SUCCESS

    def wait_for(self, wanted: set[str], deadline: float) -> bool:
        while time.monotonic() < deadline:
            with self.lock:
                if wanted <= set(self.bodies):
                    return True
            time.sleep(POLL_S)
        return False


def run_push(configuration: ClientConfiguration, topic: str, group: str, rounds: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    collector = Collector()
    consumer = LitePushConsumer(configuration, group, topic, collector)
    consumer.startup()
    producer = Producer(configuration, (topic,))
    producer.startup()
    try:
        consumer.subscribe_lite("l0")
        consumer.subscribe_lite("l1")
        line("SUBSCRIBED")
        for index in range(rounds):
            for lite in LITE_TOPICS:
                send(producer, topic, lite, f"{lite}-{index}")
        wanted = {f"{lite}-{index}" for lite in ("l0", "l1") for index in range(rounds)}
        if not collector.wait_for(wanted, deadline):
            line("FAILED the subscribed lite topics' messages did not all come")
            return
        consumer.unsubscribe_lite("l1")
        line("UNSUBSCRIBED")
        send(producer, topic, "l1", "l1-after")
        send(producer, topic, "l0", "l0-after")
        if not collector.wait_for({"l0-after"}, deadline):
            line("FAILED l0-after did not come")
    finally:
        producer.shutdown()
        consumer.shutdown()


def run_simple(configuration: ClientConfiguration, topic: str, group: str, rounds: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    consumer = LiteSimpleConsumer(topic, configuration, group, await_duration=5)
    consumer.startup()
    producer = Producer(configuration, (topic,))
    producer.startup()
    try:
        consumer.subscribe_lite("l0")
        line("SUBSCRIBED")
        for index in range(rounds):
            for lite in ("l0", "l1"):
                send(producer, topic, lite, f"{lite}-{index}")
        received = 0
        while received < rounds and time.monotonic() < deadline:
            try:
                messages = consumer.receive(16, 30)
            except Exception as err:  # the client raises its own exception types and plain ones alike
                line(f"RETRY {type(err).__name__} {err}"[:300])
                time.sleep(POLL_S)
                continue
            for message in messages:
                line(f"RECEIVED {message.lite_topic} {message.body.decode()}")
                consumer.ack(message)
                received += 1
    finally:
        producer.shutdown()
        consumer.shutdown()


def main(mode: str, endpoint: str, topic: str, group: str, rounds: int) -> None:
    configuration = ClientConfiguration(endpoint, Credentials("", ""), request_timeout=10)
    try:
        (run_push if mode == "push" else run_simple)(configuration, topic, group, rounds)
    except Exception as err:  # the client raises its own exception types and plain ones alike
        line(f"FAILED {type(err).__name__} {err}")
    line("DONE")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
