"""Puts of POP's revive-topic records and revived messages (``EscapeBridge.putMessageToSpecificQueue``).

Revive records carry ``TIMER_DELIVER_MS``, so they are routed through the timer topic exactly as
the send path routes a timer message (``HookUtils.handleScheduleMessage``); a due time already
passed puts them straight into the revive queue. Every put goes through the broker's ordinary put
(group commit, ``SYNC_FLUSH`` waits), and a refused put is logged and reported as ``False``: the
caller answers as Java does when a checkpoint cannot be stored.

What is refused for the client's numbers (a pop or invisible time past the timer's reach, beyond
Java's long) is a WARNING, a refused store an ERROR; both go through a
:class:`~gateway.transport.log_limit.LogLimiter`, so a request with a thousand such entries, or a
client repeating it, writes one line per kind every 10 s, with the count of the rest.
"""

from __future__ import annotations

import logging

from broker.controller import BrokerController
from broker.pop.records import ack_record, ck_record, revive_topic
from broker.timer.service import TimerMessageError, route_timer_message_by_config
from codec.bodies.pop import AckMsg, BatchAckMsg, PopCheckPoint
from codec.errors import CodecError, RocketMQError
from codec.message import MessageRecord
from gateway.transport.log_limit import LogLimiter
from store.errors import StoreError

logger = logging.getLogger(__name__)


class RecordWriter:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.revive_topic = revive_topic(broker.config.broker_cluster_name)
        self.failures = 0
        self.refusal_log = LogLimiter(logger)  # one line per kind every 10 s, per broker

    async def put_ck(self, ck: PopCheckPoint, revive_qid: int) -> bool:
        """Store a checkpoint in revive queue ``revive_qid``; False if refused."""
        b = self.broker
        try:
            record, props = ck_record(
                ck, self.revive_topic, revive_qid, b.now_ms(), b.store_host, b.store_port
            )
        except CodecError as err:  # numbers beyond Java's long (a hostile invisible time)
            self.failures += 1
            self.refusal_log.warning("ck codec", "POP checkpoint of %s not written: %s", ck.topic, err)
            return False
        return await self.put_record(record, props)

    async def put_ack(self, ack: AckMsg | BatchAckMsg, revive_qid: int, invisible_time: int) -> bool:
        """Store an ``ack``/``bAck`` record due at ``ack.pop_time + invisible_time``; False if refused."""
        b = self.broker
        try:
            record, props = ack_record(
                ack, self.revive_topic, revive_qid, invisible_time, b.now_ms(), b.store_host, b.store_port
            )
        except CodecError as err:
            self.failures += 1
            self.refusal_log.warning("ack codec", "POP ack of %s not written: %s", ack.topic, err)
            return False
        return await self.put_record(record, props)

    async def put_record(self, record: MessageRecord, props: dict[str, str]) -> bool:
        broker = self.broker
        try:
            route_timer_message_by_config(broker.config, record, props, broker.now_ms())
            result = await broker.put_messages([record], None)
        except TimerMessageError as err:  # the client's pop or invisible time
            self.failures += 1
            self.refusal_log.warning("timer", "POP record for %s not stored: %s", record.topic, err)
            return False
        except (RocketMQError, StoreError) as err:
            self.failures += 1
            self.refusal_log.error("store", "POP record for %s not stored: %s", record.topic, err)
            return False
        if not result.ok:
            self.failures += 1
            self.refusal_log.error("put", "POP record for %s not stored: %s", record.topic, result)
            return False
        return True
