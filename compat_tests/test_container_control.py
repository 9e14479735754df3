"""The Python testcontainers module's test-tool surface, the same as the Java and Go modules'
(docker/testcontainers/): a declared topic (``with_topic``), a fault rule (``add_fault`` /
``clear_faults``) and the stored messages (``await_messages``), all through the image's
environment and its HTTP control endpoint. One container for the module.

The sends are raw SEND_MESSAGE_V2 frames (:mod:`compat_tests.raw_client`), so the test sees each
answer's code itself instead of a client's retries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from compat_tests.raw_client import send_message_v2
from gateway.control.client import ControlError
from gateway.testing.container import RocketMQGatewayContainer
from gateway.testing.probe import probe, split_address

pytestmark = [pytest.mark.compat, pytest.mark.slow]
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # the reaper image cannot be pulled here

TOPIC = "py-orders"
SUCCESS, SYSTEM_BUSY = 0, 2  # ResponseCode
BUSY_REMARK = "[PCBUSY_CLEAN_QUEUE]broker busy"  # the start of BrokerFastFailure's flow-control text


@pytest.fixture(scope="module")
def gateway() -> Iterator[RocketMQGatewayContainer]:
    with (
        RocketMQGatewayContainer()
        .with_topic(TOPIC, 2, "normal")
        .with_group("py-billing", retryMaxTimes=3) as gw
    ):
        yield gw


def send(gateway: RocketMQGatewayContainer, queue_id: int, uniq_key: str) -> dict[str, object]:
    properties = f"KEYS\x01order-1\x02TAGS\x01TagA\x02UNIQ_KEY\x01{uniq_key}\x02"
    return send_message_v2(
        split_address(gateway.get_broker_address()),
        group="py-producer",
        topic=TOPIC,
        broker_name="broker-a",
        body=b"one order",
        properties=properties,
        queue_id=queue_id,
    )


def test_declared_topic_is_routed_with_its_two_queues(gateway: RocketMQGatewayContainer) -> None:
    assert probe(gateway.get_namesrv_address(), topic=TOPIC).topic_brokers == ("broker-a",)
    beyond = send(gateway, 2, "7F0000010001000000000000000000A1")  # a third queue: not declared
    assert beyond["code"] != SUCCESS, beyond
    assert "queueId[2] is illegal" in str(beyond["remark"]), beyond


def test_declared_group_is_known_before_any_consumer(gateway: RocketMQGatewayContainer) -> None:
    assert gateway.control.group_offsets("py-billing")["group"] == "py-billing"
    with pytest.raises(ControlError) as unknown:
        gateway.control.group_offsets("py-never-declared")
    assert unknown.value.status == 404


def test_fault_answers_once_then_the_message_is_stored(gateway: RocketMQGatewayContainer) -> None:
    fault_id = gateway.add_fault("SEND_MESSAGE_V2", SYSTEM_BUSY, times=1)
    uniq_key = "7F0000010001000000000000000000B2"

    busy = send(gateway, 1, uniq_key)
    stored_answer = send(gateway, 1, uniq_key)

    assert busy["code"] == SYSTEM_BUSY, busy
    assert str(busy["remark"]).startswith(BUSY_REMARK), busy
    assert stored_answer["code"] == SUCCESS, stored_answer
    [rule] = gateway.faults.list()
    assert (rule["id"], rule["fired"], rule["active"]) == (fault_id, 1, False)
    [message] = gateway.await_messages(TOPIC, 1, timeout_s=10.0)
    assert (message["msgId"], message["queueId"], message["queueOffset"]) == (uniq_key, 1, 0)
    assert (message["keys"], message["tags"], message["body"]) == ("order-1", "TagA", "one order")
    assert gateway.clear_faults() == 1
    assert gateway.faults.list() == []


def test_await_messages_says_how_many_there_were(gateway: RocketMQGatewayContainer) -> None:
    with pytest.raises(TimeoutError, match="1"):
        gateway.await_messages(TOPIC, 5, timeout_s=0.5)
