"""Helpers shared by the broker's test modules: an in-process broker on a free port with a client
connection to it, and the send and pull requests a client would write."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import trio

from broker.app import BrokerApp
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.pull import PullMessageRequestHeader, PullSysFlag
from codec.headers.send import SendMessageRequestHeaderV2
from codec.message import MessageRecord, iter_records
from codec.properties import encode_properties
from gateway.transport.client import connect
from gateway.transport.config import ServerConfig
from gateway.transport.connection import Connection
from gateway.transport.dispatch import Dispatcher
from tests.helpers import broker_config


class AnswersBroker(Protocol):
    """A client-side party that answers the broker's requests (e.g. transaction checks)."""

    dispatcher: Dispatcher


PULL_FLAGS = PullSysFlag.SUBSCRIPTION | PullSysFlag.SUSPEND


@asynccontextmanager
async def running_broker(root: Path, **fields: object) -> AsyncIterator[tuple[BrokerApp, Connection]]:
    app = BrokerApp(broker_config(root, **fields), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        try:
            async with connect(f"127.0.0.1:{app.server.port}") as conn:
                yield app, conn
        finally:
            app.shutdown()
            with trio.fail_after(10):
                await app.server.wait_closed()


def send_request(
    topic: str,
    body: bytes,
    props: dict[str, str] | None = None,
    queue_id: int = 0,
    batch: bool = False,
    code: int = RequestCode.SEND_MESSAGE_V2,
) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="pg",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(props or {}),
        reconsume_times=0,
        unit_mode=False,
        batch=batch,
    )
    return RemotingCommand.request(code, header, body=body)


def pull_request(
    topic: str,
    offset: int,
    queue_id: int = 0,
    subscription: str = "*",
    suspend_ms: int = 1000,
    flags: int = PULL_FLAGS,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="cg",
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=int(flags),
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription=subscription,
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header)


def records(resp: RemotingCommand) -> list[MessageRecord]:
    return list(iter_records(resp.body))


async def pulled(conn: Connection, topic: str, queue_id: int = 1) -> list[MessageRecord]:
    resp = await conn.invoke(
        pull_request(topic, 0, queue_id=queue_id, suspend_ms=0, flags=PullSysFlag.SUBSCRIPTION), 5
    )
    return list(iter_records(resp.body)) if resp.code == ResponseCode.SUCCESS else []


@asynccontextmanager
async def running(
    root: Path, producer: AnswersBroker | None = None, **fields: object
) -> AsyncIterator[tuple[BrokerApp, Connection]]:
    app = BrokerApp(broker_config(root, **fields), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        try:
            dispatcher = producer.dispatcher if producer is not None else None
            async with connect(f"127.0.0.1:{app.server.port}", dispatcher) as conn:
                yield app, conn
        finally:
            app.shutdown()
            with trio.fail_after(10):
                await app.wait_stopped()
