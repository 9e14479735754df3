"""A slave's copy of its master's metadata (``org.apache.rocketmq.broker.slave.SlaveSynchronize``).

The master's broker address comes from the registration answer (``masterAddr``,
``handleRegisterBrokerResult``). ``syncAll`` asks the master for its topic configs
(GET_ALL_TOPIC_CONFIG), consumer offsets (GET_ALL_CONSUMER_OFFSET), delay offsets
(GET_ALL_DELAY_OFFSET) and subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) and takes them
as Java does: topics and groups are replaced when the master's data version differs (the ones the
master no longer has are deleted), offsets are merged over the slave's, delay offsets replaced;
each is persisted through the broker's owner of persisted tables (:mod:`broker.config_tables`).
Java runs it every 60 s (checked every 3 s); this slave runs it as soon as it
learns its master's address and then every 60 s, so a slave answers pulls of the master's topics
from its first minute on. Not copied: message request modes and timer metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

import trio

from broker.controller import BrokerController
from codec import fastjson
from codec.bodies.register import DataVersion
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import EmptyHeader
from gateway.transport.client import connect
from gateway.transport.connection import Connection
from store.metadata import CONSUMER_OFFSET_JSON, DELAY_OFFSET_JSON, SUBSCRIPTION_GROUP_JSON, TOPICS_JSON

logger = logging.getLogger(__name__)

SYNC_PERIOD_S = 60.0  # BrokerController: syncAll when 60 s have passed since the last one
REQUEST_TIMEOUT_S = 10.0


class _VersionedTable(Protocol):
    """A metadata table a slave replaces from its master's (topics, subscription groups)."""

    @property
    def data_version(self) -> DataVersion: ...

    @property
    def table(self) -> MutableMapping[str, Any]: ...

    def load_obj(self, obj: Any) -> None: ...


class SlaveSynchronize:
    """See the module docstring."""

    def __init__(
        self,
        controller: BrokerController,
        sign: Callable[[RemotingCommand], None] | None = None,
        period_s: float = SYNC_PERIOD_S,
    ) -> None:
        self.controller = controller
        self.tables = controller.tables
        self.sign = sign
        self.period_s = period_s
        self.master_addr = ""
        self.syncs = 0
        self._known = trio.Event()

    def set_master_addr(self, master_addr: str | None) -> None:
        if master_addr and master_addr != self.master_addr:
            logger.info("Update master address from %s to %s", self.master_addr or None, master_addr)
            self.master_addr = master_addr
            self._known.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Once the master is known: a round, then the next one when ``period_s`` have passed
        or at once when the master's address changes."""
        task_status.started()
        await self._known.wait()
        while True:
            self._known = trio.Event()
            await self.sync_all()
            with trio.move_on_after(self.period_s):
                await self._known.wait()

    async def sync_all(self) -> None:
        """One round; a failure is logged and waits for the next round."""
        address = self.master_addr
        if not address or address == self.controller.config.broker_addr:
            return
        try:
            async with connect(address) as conn:
                topics = await self._get(conn, RequestCode.GET_ALL_TOPIC_CONFIG)
                offsets = await self._get(conn, RequestCode.GET_ALL_CONSUMER_OFFSET)
                delay = await self._get(conn, RequestCode.GET_ALL_DELAY_OFFSET)
                groups = await self._get(conn, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        except (OSError, RocketMQError, trio.TooSlowError) as err:
            logger.error("sync of metadata from master %s failed: %s", address, err)
            return
        controller = self.controller
        self._take_table(topics, controller.topics, "topicConfigTable", TOPICS_JSON)
        self._take_offsets(offsets)
        controller.schedule.load_obj(delay)
        self.tables.persist(DELAY_OFFSET_JSON)
        self._take_table(groups, controller.groups, "subscriptionGroupTable", SUBSCRIPTION_GROUP_JSON)
        self.syncs += 1
        logger.info(
            "Update slave topic config, consumer offset, delay offset and groups from master, %s", address
        )

    async def _get(self, conn: Connection, code: int) -> Any:
        request = RemotingCommand.request(code, EmptyHeader())
        if self.sign is not None:
            self.sign(request)
        with trio.fail_after(REQUEST_TIMEOUT_S):
            response = await conn.invoke(request, timeout_s=REQUEST_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            raise RocketMQError(f"code {response.code}: {response.remark}")
        doc = fastjson.loads(response.body)
        if not isinstance(doc, dict):
            raise RocketMQError("the answer's body is not an object")
        return doc

    def _take_table(self, doc: dict[str, Any], manager: _VersionedTable, key: str, file_name: str) -> None:
        """``syncTopicConfig`` / ``syncSubscriptionGroupConfig``: when the master's data version
        differs, its table under ``key`` replaces the slave's (entries it lacks are deleted)."""
        version = doc.get("dataVersion")
        if isinstance(version, dict) and DataVersion.from_obj(version) == manager.data_version:
            return
        names = set((doc.get(key) or {}).keys())
        table = manager.table
        for name in [n for n in table if n not in names]:
            del table[name]
        manager.load_obj(doc)
        self.tables.persist(file_name)

    def _take_offsets(self, doc: dict[str, Any]) -> None:
        offsets = self.controller.offsets
        merged = {**offsets.to_obj().get("offsetTable", {}), **(doc.get("offsetTable") or {})}
        offsets.load_obj({**doc, "offsetTable": merged})
        self.tables.persist(CONSUMER_OFFSET_JSON)

