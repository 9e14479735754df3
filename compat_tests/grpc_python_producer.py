"""The Python RocketMQ 5 gRPC producer (rocketmq-python-client 5.1.2, unmodified) as an application
uses it, run as its own process by ``compat_tests/test_grpc_compat.py``: the client ships its own
generated apache.rocketmq.v2 classes, which cannot share a protobuf descriptor pool with ours.

Prints one line per outcome, as ``rmqgrpc.Produce`` does: ``STARTED``, ``SENT <index> <message
id>``, ``FAILED <index> <error>``, ``START_FAILED <error>``, ``CLOSED``.

    RMQ_ACCESS_KEY=ak RMQ_SECRET_KEY=sk python -m compat_tests.grpc_python_producer ENDPOINT TOPIC COUNT

``RMQ_NAMESPACE`` sets the client's namespace (``ClientConfiguration``'s third argument: the
``x-mq-namespace`` header and every ``Resource.resource_namespace``).
"""

from __future__ import annotations

import os
import sys

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def credentials() -> Credentials:
    """``SessionCredentials`` from ``RMQ_ACCESS_KEY`` / ``RMQ_SECRET_KEY`` (none when unset)."""
    return Credentials(os.environ.get("RMQ_ACCESS_KEY", ""), os.environ.get("RMQ_SECRET_KEY", ""))


def main(endpoint: str, topic: str, count: int) -> None:
    configuration = ClientConfiguration(
        endpoint, credentials(), os.environ.get("RMQ_NAMESPACE", ""), request_timeout=10
    )
    producer = Producer(configuration, (topic,))  # plaintext: the client's TLS trusts only system roots
    try:
        producer.startup()
    except Exception as err:  # the client raises its own exception types and plain ones alike
        print(f"START_FAILED {type(err).__name__} {err}".replace("\n", " "), flush=True)
        return
    print("STARTED", flush=True)
    try:
        for index in range(count):
            message = Message()
            message.topic = topic
            message.body = f"python grpc message {index} 中文".encode()
            message.tag = "TagP"
            message.keys = f"pkey-{index}"
            message.add_property("index", str(index))
            try:
                receipt = producer.send(message)
                print(f"SENT {index} {receipt.message_id}", flush=True)
            except Exception as err:
                print(f"FAILED {index} {type(err).__name__} {err}".replace("\n", " "), flush=True)
    finally:
        producer.shutdown()
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
