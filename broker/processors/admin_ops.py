"""Operations requests of ``mqadmin`` beyond topic and group basics (``AdminBrokerProcessor``):
batch topic and group updates, store maintenance, producer and consume-queue views, and the
answers of a master with no HA peers, no cold-data throttling and no RocksDB store.

* UPDATE_AND_CREATE_TOPIC_LIST (``updateTopicList``) and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
  (``updateSubGroupList``): a ``CreateTopicListRequestBody`` / ``SubscriptionGroupList``, each
  entry validated and stored as by the single-item requests.
* GET_SYSTEM_TOPIC_LIST_FROM_BROKER (``exportMetadata``): ``TopicValidator``'s system topics.
* CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG, CLEAN_UNUSED_TOPIC: the store's cleanup
  run now (``cleanExpiredConsumerQueue``, ``executeDeleteFilesManually``); unused topics are
  listed in the log (this store keeps their consume queues until the files expire).
* GET_ALL_PRODUCER_INFO (``producer``), QUERY_CONSUME_QUEUE (``queryCq``).
* GET_BROKER_HA_STATUS (``haStatus``): the master's slaves or the slave's master
  (``HARuntimeInfo``, :mod:`broker.ha`); RESET_MASTER_FLUSH_OFFSET: a master ignores it, as
  Java's; CHECK_ROCKSDB_CQ_WRITE_PROGRESS / EXPORT_ROCKSDB_CONFIG_TO_JSON: what the real broker
  answers when its store is not RocksDB ("in progress", "export done.").
* UPDATE_COLD_DATA_FLOW_CTR_CONFIG, REMOVE_COLD_DATA_FLOW_CTR_CONFIG, GET_COLD_DATA_FLOW_CTR_INFO:
  the per-group thresholds of :class:`broker.cold_data.ColdDataFlowControl`.
* SWITCH_TIMER_ENGINE (5.5's ``switchTimerEngine``): this broker's one engine is the file time
  wheel, so ``F`` succeeds as on a 5.5.0 broker with its defaults, and ``R`` (the RocksDB timeline)
  is refused as there, since that engine was not configured at start.
* SET_COMMITLOG_READ_MODE (``setCommitLogReadAheadMode``): ``MADV_NORMAL`` (0) or ``MADV_RANDOM``
  (1) turns ``dataReadAheadEnable`` on or off, which GET_BROKER_CONFIG then shows; the store reads
  through the page cache either way, so there are no mappings to advise.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from broker.cold_data import ColdDataFlowControl, java_long
from broker.controller import BrokerController
from broker.ha.runtime_info import master_runtime_info
from broker.subscription_group_manager import SubscriptionGroupConfig, alter_group_attributes
from broker.topic_attributes import requested_attributes
from broker.topic_config_manager import (
    validate_group,
    validate_topic_config,
)
from codec import fastjson
from codec.bodies.base import JsonBody
from codec.bodies.register import TopicConfig
from codec.codes import RequestCode, ResponseCode, language_name
from codec.command import RemotingCommand
from codec.errors import CodecError, RocketMQError
from codec.headers.admin import QueryConsumeQueueRequestHeader
from codec.java_properties import parse_properties
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)
MAX_QUERY_CQ_UNITS = 10_000  # units one QUERY_CONSUME_QUEUE answers at most (Java: any count)

CHECK_IN_PROGRESS = 2  # CheckRocksdbCqWriteResult.CheckStatus.CHECK_IN_PROGRESS
READ_AHEAD_MODE = "READ_AHEAD_MODE"  # FIleReadaheadMode.READ_AHEAD_MODE, the request's field
MADV_NORMAL, MADV_RANDOM = 0, 1  # LibC: read ahead on, off
TIMER_ENGINE_TYPE = "E_T"  # MessageConst.TIMER_ENGINE_TYPE, the request's field
TIMER_ENGINE_ROCKSDB_TIMELINE, TIMER_ENGINE_FILE_TIME_WHEEL = "R", "F"  # MessageConst


_Entry = TypeVar("_Entry", bound=JsonBody)


def _decode_list(body: bytes, body_name: str, key: str, entry: type[_Entry]) -> list[_Entry]:
    """The entries of the list ``key`` of a batch-update body (a missing or null list is empty);
    raises :class:`RocketMQError` (SYSTEM_ERROR) naming ``body_name`` when the body is malformed."""
    try:
        doc = fastjson.loads(body)
        return [entry.from_obj(obj) for obj in doc.get(key) or []]
    except (CodecError, AttributeError, TypeError, ValueError) as err:
        raise RocketMQError(f"bad {body_name}: {err}", response_code=ResponseCode.SYSTEM_ERROR) from err


class AdminOpsProcessor:
    def __init__(self, broker: BrokerController, cold_data: ColdDataFlowControl) -> None:
        self.broker = broker
        self.cold_data = cold_data

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, self.update_topic_list, None)
        reg(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, self.update_group_list, None)
        reg(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, self.get_system_topic_list, None)
        reg(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queue, None)
        reg(RequestCode.DELETE_EXPIRED_COMMITLOG, self.delete_expired_commit_log, None)
        reg(RequestCode.CLEAN_UNUSED_TOPIC, self.clean_unused_topic, None)
        reg(RequestCode.GET_ALL_PRODUCER_INFO, self.get_all_producer_info, None)
        reg(RequestCode.QUERY_CONSUME_QUEUE, self.query_consume_queue, QueryConsumeQueueRequestHeader)
        reg(RequestCode.GET_BROKER_HA_STATUS, self.get_ha_status, None)
        reg(RequestCode.GET_COLD_DATA_FLOW_CTR_INFO, self.get_cold_data_flow_ctr_info, None)
        reg(RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG, self.update_cold_data_flow_ctr_config, None)
        reg(RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG, self.remove_cold_data_flow_ctr_config, None)
        reg(RequestCode.SET_COMMITLOG_READ_MODE, self.set_commit_log_read_mode, None)
        reg(RequestCode.RESET_MASTER_FLUSH_OFFSET, self.reset_master_flush_offset, None)
        reg(RequestCode.CHECK_ROCKSDB_CQ_WRITE_PROGRESS, self.check_rocksdb_cq_write_progress, None)
        reg(RequestCode.EXPORT_ROCKSDB_CONFIG_TO_JSON, self.export_rocksdb_config_to_json, None)
        reg(RequestCode.SWITCH_TIMER_ENGINE, self.switch_timer_engine, None)

    # -- batch updates ---------------------------------------------------------------------------

    def update_topic_list(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        topics = _decode_list(request.body, "CreateTopicListRequestBody", "topicConfigList", TopicConfig)
        logger.info(
            "updateAndCreateTopicList: topicNames: %s, called by %s",
            ";".join(t.topic_name for t in topics),
            ctx.connection.remote_addr,
        )
        for topic in topics:
            validate_topic_config(topic)  # refusals raise TopicValidationError (INVALID_PARAMETER)
            self.broker.topics.refuse_system(topic.topic_name)
            existing = self.broker.topics.select(topic.topic_name)
            topic.attributes = requested_attributes(
                topic.attributes, existing, self.broker.config.followed.message_types
            )
        for topic in topics:
            if topic != self.broker.topics.select(topic.topic_name):
                self.broker.topics.update(topic)
        return request.make_response(ResponseCode.SUCCESS)

    def update_group_list(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        groups = _decode_list(
            request.body, "SubscriptionGroupList", "groupConfigList", SubscriptionGroupConfig
        )
        logger.info(
            "updateAndCreateSubscriptionGroupList: groupNames: %s, called by %s",
            ";".join(g.group_name for g in groups),
            ctx.connection.remote_addr,
        )
        for group in groups:
            validate_group(group.group_name)
        for group in groups:
            current = self.broker.groups.find(group.group_name, create=False)
            group.attributes = alter_group_attributes(current.attributes if current else {}, group.attributes)
            self.broker.groups.update(group)
        return request.make_response(ResponseCode.SUCCESS)

    def get_system_topic_list(
        self, _ctx: RequestContext, request: RemotingCommand, _h: Any
    ) -> RemotingCommand:
        topics = self.broker.topics.system_topics
        body = fastjson.dumps({"topicList": sorted(topics)})
        return request.make_response(ResponseCode.SUCCESS, body=body)

    # -- store maintenance -----------------------------------------------------------------------

    def clean_expired_consume_queue(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        logger.info("cleanExpiredConsumeQueue: start")
        self.broker.store.cleaner.clean_queues()
        logger.info("cleanExpiredConsumeQueue: end")
        return request.make_response(ResponseCode.SUCCESS)

    def delete_expired_commit_log(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        deleted = self.broker.store.clean(manual=True)
        logger.warning("deleteExpiredCommitLog: %d expired commit-log file(s) deleted", deleted)
        return request.make_response(ResponseCode.SUCCESS)

    def clean_unused_topic(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        broker = self.broker
        unused = sorted(
            {
                t
                for t, _q in broker.store.queue_offsets
                if broker.topics.select(t) is None and not broker.topics.is_system(t)
            }
        )
        logger.warning("cleanUnusedTopic: queues of topics no longer configured: %s", unused or "none")
        return request.make_response(ResponseCode.SUCCESS)

    # -- views -----------------------------------------------------------------------------------

    def get_all_producer_info(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """``ProducerTableInfo``: every producer channel by group."""
        data: dict[str, list[dict[str, Any]]] = {}
        for group, channels in self.broker.clients.producers.items():
            data[group] = [
                {
                    "clientId": channel.client_id,
                    "remoteIP": f"/{channel.connection.remote_addr}",
                    "language": language_name(channel.language),
                    "version": channel.version,
                    "lastUpdateTimestamp": channel.last_update_ms,
                }
                for channel in channels.values()
            ]
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps({"data": data}))

    def query_consume_queue(
        self, _ctx: RequestContext, request: RemotingCommand, header: QueryConsumeQueueRequestHeader
    ) -> RemotingCommand:
        store = self.broker.store
        topic, queue_id = header.topic, header.queue_id
        if self.broker.topics.select(topic) is None and store.get_max_offset_in_queue(topic, queue_id) == 0:
            raise RocketMQError(f"{queue_id}@{topic} is not exist!", response_code=ResponseCode.SYSTEM_ERROR)
        body: dict[str, Any] = {
            "maxQueueIndex": store.get_max_offset_in_queue(topic, queue_id),
            "minQueueIndex": store.get_min_offset_in_queue(topic, queue_id),
        }
        if header.consumer_group is not None:
            info = self.broker.clients.consumers.get(header.consumer_group)
            sub = info.subscriptions.get(topic) if info is not None else None
            if sub is None:
                body["filterData"] = f"{header.consumer_group}@{topic} is not online!"
            else:
                body["subscriptionData"] = sub.to_obj()
        units = []
        for unit in store.iter_queue_units(topic, queue_id, header.index):
            if unit.queue_offset - header.index >= min(header.count, MAX_QUERY_CQ_UNITS):
                break
            units.append(
                {
                    "eval": False,
                    "physicOffset": unit.phy_offset,
                    "physicSize": unit.size,
                    "tagsCode": unit.tags_code,
                }
            )
        if not units and header.index >= body["maxQueueIndex"]:
            return request.make_response(
                ResponseCode.SUCCESS, f"Index {header.index} of {queue_id}@{topic} is not exist!"
            )
        body["queueData"] = units
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    # -- features this broker does not run: the real broker's answers without them -------------

    def get_ha_status(self, _ctx: RequestContext, request: RemotingCommand, _header: Any) -> RemotingCommand:
        """``HARuntimeInfo``: the master's slaves, or the slave's connection (:mod:`broker.ha`)."""
        body = self.broker.ha_runtime_info() or master_runtime_info(self.broker.store.max_phy_offset, [])
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    def reset_master_flush_offset(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """``resetMasterFlushOffset``: only a slave moves its copy of the master's flushed offset;
        a master (the only role this broker plays) answers SUCCESS and changes nothing."""
        if self.broker.config.broker_id != 0:
            logger.info(
                "resetMasterFlushOffset from %s: this broker keeps no slave flush offset", ctx.connection
            )
        return request.make_response(ResponseCode.SUCCESS)

    # -- cold data and read ahead ----------------------------------------------------------------

    def get_cold_data_flow_ctr_info(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(self.cold_data.info()))

    def update_cold_data_flow_ctr_config(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """The body is ``group=threshold`` properties; as in Java an entry whose threshold is not a
        long is logged and skipped, and the answer is SUCCESS all the same."""
        if request.body:
            props = parse_properties(request.body.decode("utf-8", errors="replace"))
            logger.info("updateColdDataFlowCtrGroupConfig from %s: %s", ctx.connection, props)
            skipped: list[str] = []
            for group, value in props.items():
                threshold = java_long(value)
                if threshold is None:
                    skipped.append(group)
                    continue
                self.cold_data.add_or_update_group_config(group, threshold)
            if skipped:  # the client's input: one WARNING line per request, however many entries
                logger.warning(
                    "updateColdDataFlowCtrGroupConfig: %d value(s) not a long, skipped (groups %r%s)",
                    len(skipped),
                    skipped[:5],
                    ", …" if len(skipped) > 5 else "",
                )
        return request.make_response(ResponseCode.SUCCESS)

    def remove_cold_data_flow_ctr_config(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """The body is the group's name, taken whole."""
        if request.body:
            group = request.body.decode("utf-8", errors="replace")
            logger.info("removeColdDataFlowCtrGroupConfig from %s: %s", ctx.connection, group)
            self.cold_data.remove_group_config(group)
        return request.make_response(ResponseCode.SUCCESS)

    def set_commit_log_read_mode(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """``setCommitLogReadaheadMode``, with Java's codes and remarks for each bad request."""
        if not request.ext_fields:
            raise RocketMQError(
                "set commitlog readahead mode param error", response_code=ResponseCode.SYSTEM_ERROR
            )
        text = request.ext_fields.get(READ_AHEAD_MODE)
        mode = java_long(text) if text is not None else None
        if mode is None or not -(2**31) <= mode < 2**31:  # Integer.parseInt threw
            raise RocketMQError(
                "set commitlog readahead mode failed", response_code=ResponseCode.SYSTEM_ERROR
            )
        if mode not in (MADV_NORMAL, MADV_RANDOM):
            raise RocketMQError(
                "set commitlog readahead mode param value error", response_code=ResponseCode.INVALID_PARAMETER
            )
        self.broker.config.extra["dataReadAheadEnable"] = "true" if mode == MADV_NORMAL else "false"
        return request.make_response(
            ResponseCode.SUCCESS, f"set commitlog readahead mode success, mode: {mode}"
        )

    def check_rocksdb_cq_write_progress(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """Java starts the check in the background and answers "in progress" at once; with no
        RocksDB consume queue there is nothing to compare, which the log says."""
        logger.info("checkRocksdbCqWriteProgress: the store has no RocksDB consume queue; nothing to check")
        return request.make_response(
            ResponseCode.SUCCESS, body=fastjson.dumps({"checkStatus": CHECK_IN_PROGRESS})
        )

    def export_rocksdb_config_to_json(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """Exports only managers backed by RocksDB: none here, so nothing to do, as in Java."""
        return request.make_response(ResponseCode.SUCCESS, "export done.")

    def switch_timer_engine(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """``AdminBrokerProcessor.switchTimerEngine`` (5.5) on a broker whose timer store is the
        file time wheel and which has no RocksDB timeline: the checks in Java's order, each with
        its code and remark; switching to the wheel it runs updates the two keys Java updates."""
        if not self.broker.config.timer_wheel_enable:
            raise RocketMQError(
                "broker timerWheelEnable is false", response_code=ResponseCode.INVALID_PARAMETER
            )
        if request.ext_fields is None:
            raise RocketMQError(
                "param error, extFields is null", response_code=ResponseCode.INVALID_PARAMETER
            )
        engine = request.ext_fields.get(TIMER_ENGINE_TYPE)
        if engine not in (TIMER_ENGINE_ROCKSDB_TIMELINE, TIMER_ENGINE_FILE_TIME_WHEEL):
            raise RocketMQError("param error", response_code=ResponseCode.INVALID_PARAMETER)
        if engine == TIMER_ENGINE_ROCKSDB_TIMELINE:
            raise RocketMQError(
                "timerRocksDBEnable must be configured true when broker start",
                response_code=ResponseCode.INVALID_PARAMETER,
            )
        self.broker.config.extra.update(timerRocksDBStopScan="true", timerStopEnqueue="false")
        return request.make_response(ResponseCode.SUCCESS, "switch timer engine success")
