"""Hostile numbers in acks and POPs: answered as Java answers them, and logged in one line.

A receipt handle whose pop time is 2^62 puts an ack record the timer cannot hold (Java answers OK
and stores nothing too); a thousand such entries in one request must not write a line each. A POP
whose invisible time is past the timer's reach likewise writes a checkpoint that cannot be stored.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio

from codec.bodies.register import TopicConfig
from codec.codes import ResponseCode
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import running
from tests.broker.test_grpc_consume import GROUP, receive, received, send
from tests.broker.test_grpc_service import Client, endpoint, in_thread
from tests.broker.test_pop import pop_request, send_all

ENTRIES = 1000
DAYS_4_MS = 4 * 24 * 3600 * 1000  # past the timer's three days (timerMaxDelaySec)


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
        # The lines of the acks only: not the start-up's ("HA port taken") nor the stop's.
        caplog.clear()
        with caplog.at_level(logging.INFO):
            acked = await in_thread(lambda: client.call("AckMessage", ack, pb.AckMessageResponse))
            lines = [r for r in caplog.records if r.name.startswith("broker")]
    assert acked.status.code == pb.OK
    assert len(acked.entries) == ENTRIES
    assert len(lines) <= 1, [r.getMessage() for r in lines[:5]]
    assert all(r.levelno < logging.ERROR and r.exc_info is None for r in lines)


async def test_pops_invisible_past_the_timer_log_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A remoting POP whose invisible time is past the timer's reach: its checkpoint cannot be
    stored, nothing is popped, and twenty such POPs write one line."""
    async with running(tmp_path) as (app, conn):
        await send_all(conn, "PopH", [b"h0"])
        caplog.clear()  # the lines of the POPs only
        with caplog.at_level(logging.INFO):
            with trio.fail_after(10):  # until the message is in its queue and its checkpoint refused
                while not app.broker.services.consume.writer.failures:
                    await conn.invoke(pop_request("PopH", DAYS_4_MS), 5)
                    await trio.sleep(0.05)
            answers = [await conn.invoke(pop_request("PopH", DAYS_4_MS), 5) for _ in range(20)]
        refused = app.broker.services.consume.writer.failures
    assert {a.code for a in answers} == {ResponseCode.POLLING_TIMEOUT}  # nothing leaves
    assert refused > 20
    lines = [r for r in caplog.records if r.name.startswith("broker.pop")]
    assert len(lines) == 1, [r.getMessage() for r in lines[:5]]
    assert lines[0].levelno == logging.WARNING
    assert lines[0].exc_info is None
