"""Shared by the fault suite: an in-process gateway, raw requests, and a log-line counter.

Requests are built from raw ``extFields`` (not typed headers) so a test can put any text, in range
or not, into any field, as an attacker or a broken client would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.headers.pull import PullSysFlag
from gateway.launcher import Endpoints, Gateway, standalone_gateway
from tests.helpers import small_store


@asynccontextmanager
async def running_gateway(
    root: Path, properties: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[Gateway, Endpoints]]:
    """A standalone gateway on free loopback ports with its store under ``root``; stopped on exit."""
    props = {**small_store(root), **(properties or {})}
    props.setdefault("kvConfigPath", str(root / "kvConfig.json"))
    gateway = standalone_gateway(str(root / "store"), properties=props)
    async with trio.open_nursery() as nursery:
        endpoints = await nursery.start(gateway.run)
        try:
            yield gateway, endpoints
        finally:
            gateway.shutdown()  # run() returns once both servers stopped (bounded by the launcher)


def send_ext(topic: str, **fields: str) -> dict[str, str]:
    """A valid SEND_MESSAGE_V2 header as ``extFields``, with ``fields`` replacing its keys."""
    ext = {
        "a": "fault_pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": "",
        "j": "0",
        "k": "false",
        "m": "false",
    }
    ext.update(fields)
    return ext


def send_command(topic: str, body: bytes, **fields: str) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=send_ext(topic, **fields), body=body)


def pull_command(topic: str, queue_id: int, offset: int, max_nums: int = 32) -> RemotingCommand:
    ext = {
        "consumerGroup": "fault_cg",
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(int(PullSysFlag.SUBSCRIPTION)),
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields=ext)


def create_topic_command(topic: str, read: str = "4", write: str = "4", perm: str = "6") -> RemotingCommand:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": read,
        "writeQueueNums": write,
        "perm": perm,
        "topicFilterType": "SINGLE_TAG",
        "order": "false",
    }
    return RemotingCommand(code=RequestCode.UPDATE_AND_CREATE_TOPIC, ext_fields=ext)


class LogCounter(logging.Handler):
    """Counts records at or above ``level`` from every logger, and those with a traceback."""

    def __init__(self, level: int = logging.ERROR) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @property
    def tracebacks(self) -> int:
        return sum(1 for r in self.records if r.exc_info)

    def __enter__(self) -> LogCounter:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        logging.getLogger().removeHandler(self)
