"""Hostile numbers in AckMessage: answered as Java answers them, and logged in one line.

A receipt handle whose pop time is 2^62 puts an ack record the timer cannot hold (Java answers OK
and stores nothing too); a thousand such entries in one request must not write a line each.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from codec.bodies.register import TopicConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.test_grpc_consume import GROUP, receive, received, send
from tests.broker.test_grpc_service import Client, endpoint, in_thread

ENTRIES = 1000


async def test_a_thousand_acks_past_the_timer_log_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with endpoint(tmp_path) as (app, _conn, port):
        app.controller.topics.update(TopicConfig("T1", 1, 1, 6))
        client = Client(port)
        await in_thread(lambda: send(client, "T1", b"a"))
        (got,) = received(await in_thread(lambda: receive(client, "T1")))
        fields = got.system_properties.receipt_handle.split(" ")
        fields[1] = str(2**62)  # the pop time
        entry = pb.AckMessageEntry(
            message_id=got.system_properties.message_id, receipt_handle=" ".join(fields)
        )
        ack = pb.AckMessageRequest(
            group=pb.Resource(name=GROUP), topic=pb.Resource(name="T1"), entries=[entry] * ENTRIES
        )
        with caplog.at_level(logging.INFO):
            acked = await in_thread(lambda: client.call("AckMessage", ack, pb.AckMessageResponse))
    assert acked.status.code == pb.OK
    assert len(acked.entries) == ENTRIES
    lines = [r for r in caplog.records if r.name.startswith("broker")]
    assert len(lines) <= 1, [r.getMessage() for r in lines[:5]]
    assert all(r.levelno < logging.ERROR and r.exc_info is None for r in lines)
