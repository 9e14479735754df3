"""What ``brokerStatus``, ``clusterList``, ``getBrokerConfig``, ``updateBrokerConfig``,
``statsAll`` and ``brokerConsumeStats`` ask the broker (``AdminBrokerProcessor``), answered from
:mod:`broker.stats` and the broker's actual configuration.

* GET_BROKER_RUNTIME_INFO: the 60 keys of Java's ``prepareRuntimeInfo`` (store statistics,
  today/yesterday counters, disk ratio of the store path, thread-pool keys of a broker whose
  queues are always empty).
* GET_BROKER_CONFIG: every key a 5.3.3 broker reports (``java_broker_config.properties``: Java's
  defaults), plus the keys of 5.5.0 under ``brokerVersion=5.5.0`` (:mod:`broker.followed_version`),
  overridden by the values this broker uses. UPDATE_BROKER_CONFIG applies the keys at
  runtime (refusing ``configBlackList``'s, as Java; ``brokerVersion`` waits for the next start),
  and persists them into ``brokerConfigPath``
  (the ``-c`` file when the CLI sets it, else ``<store>/config/broker.properties``).
* VIEW_BROKER_STATS_DATA and GET_BROKER_CONSUME_STATS.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shutil
from pathlib import Path
from typing import Any

from broker.config import JAVA_KEY_ALIASES
from broker.controller import BrokerController
from broker.stats import BrokerStats, java_double
from broker.topic_config_manager import SCHEDULE_TOPIC
from codec import fastjson
from codec.bodies.route import KVTable
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.config_fields import apply_properties, camel_case
from codec.errors import RocketMQError
from codec.headers.admin import ViewBrokerStatsDataRequestHeader
from codec.java_properties import format_properties, parse_properties
from codec.versions import version_desc
from gateway.transport.dispatch import Dispatcher, RequestContext

logger = logging.getLogger(__name__)

JAVA_DEFAULTS_FILE = Path(__file__).with_name("java_broker_config.properties")
CONFIG_BLACK_LIST = "configBlackList;brokerConfigPath"  # BrokerConfig.configBlackList default
STORE_KEY_SPELLING = {"checkCrcOnRecover": "checkCRCOnRecover"}  # acronyms camel_case cannot restore
#: 5.5 keys this broker reads (lite topics, ``broker.lite_lifecycle``): in the answer only when
#: the followed release has them (``broker.followed_version``), not in 5.3.3's.
KEYS_SINCE_55 = ("maxLiteSubscriptionCount", "liteTtlCheckInterval", "minLiteTTl")
START_ONLY_KEY = "brokerVersion"  # broker.followed_version: fixed while the broker runs
DEFAULT_HA_PORT_OFFSET = 1  # BrokerStartup: haListenPort = listenPort + 1 unless configured
THREAD_POOL_CAPACITIES = {  # BrokerConfig *ThreadPoolQueueCapacity defaults
    "sendThreadPoolQueueCapacity": 10000,
    "pullThreadPoolQueueCapacity": 100000,
    "litePullThreadPoolQueueCapacity": 100000,
    "queryThreadPoolQueueCapacity": 20000,
    "ackThreadPoolQueueCapacity": 100000,
}


def java_defaults() -> dict[str, str]:
    """The 5.3.3 broker's configuration keys with Java's default values."""
    return parse_properties(JAVA_DEFAULTS_FILE.read_text(encoding="utf-8"))


def rocketmq_home() -> str:
    """``BrokerConfig.rocketmqHome`` as Java sets it: the ``ROCKETMQ_HOME`` environment variable
    (``-Drocketmq.home.dir`` has no equivalent here), else the directory this broker is installed
    in, which plays the distribution directory's part (the Java broker refuses to start without one)."""
    return os.environ.get("ROCKETMQ_HOME") or str(Path(__file__).resolve().parents[2])


def human_bytes(count: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, false)``: binary units, one decimal."""
    if count < 1024:
        return f"{count} B"
    exp = min(int(math.log(count, 1024)), 6)
    return f"{count / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"


class BrokerStatusProcessor:
    def __init__(self, broker: BrokerController, stats: BrokerStats) -> None:
        self.broker = broker
        self.stats = stats

    def register(self, dispatcher: Dispatcher) -> None:
        reg = dispatcher.register
        reg(RequestCode.GET_BROKER_RUNTIME_INFO, self.get_broker_runtime_info, None)
        reg(RequestCode.GET_BROKER_CONFIG, self.get_broker_config, None)
        reg(RequestCode.UPDATE_BROKER_CONFIG, self.update_broker_config, None)
        reg(RequestCode.VIEW_BROKER_STATS_DATA, self.view_broker_stats_data, ViewBrokerStatsDataRequestHeader)
        reg(RequestCode.GET_BROKER_CONSUME_STATS, self.get_broker_consume_stats, None)

    # -- runtime info ----------------------------------------------------------------------------

    def runtime_info(self) -> dict[str, str]:
        broker, store = self.broker, self.broker.store
        info = self.stats.store_runtime_info()
        followed = broker.config.followed
        root = store.config.store_path_root_dir
        used = store.disk_used_ratio()
        ratio = java_double(round(used, 2) if used >= 0 else -1.0)
        info.update(
            {
                "commitLogDiskRatio": ratio,
                f"commitLogDiskRatio_{store.config.commit_log_dir}": ratio,
                "consumeQueueDiskRatio": ratio,
                "commitLogMinOffset": str(store.min_phy_offset),
                "commitLogMaxOffset": str(store.max_phy_offset),
                "brokerActive": "true",
                "brokerVersionDesc": version_desc(followed.mq_version),
                **{k: str(v) for k, v in self.stats.day_counters().items()},
                "dispatchBehindBytes": "0",
                "pageCacheLockTimeMills": "0",
                "earliestMessageTimeStamp": str(broker.earliest_message_time()),
                "startAcceptSendRequestTimeStamp": "0",
                "timerReadBehind": "0",
                "timerOffsetBehind": "0",
                "timerCongestNum": "0",
                "timerEnqueueTps": "0.0",
                "timerDequeueTps": "0.0",
                "remainTransientStoreBufferNumbs": str(2**31 - 1),
                "remainHowManyDataToFlush": human_bytes(max(store.max_phy_offset - self._flushed(), 0)),
                "EndTransactionQueueSize": "0",
                "EndTransactionThreadPoolQueueCapacity": "100000",
            }
        )
        if followed.runtime_info_has_version:
            info["brokerVersion"] = str(followed.mq_version)
        if os.path.isdir(root):
            usage = shutil.disk_usage(root)
            info["commitLogDirCapacity"] = (
                f"Total : {human_bytes(usage.total)}, Free : {human_bytes(usage.free)}."
            )
        for level, offset in sorted(broker.schedule.offsets.items()):
            # ScheduleMessageService.buildRunningStats: "delivered,max" of each level's queue.
            top = store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1)
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{top}"
        for capacity_key, capacity in THREAD_POOL_CAPACITIES.items():
            prefix = capacity_key.removesuffix("Capacity")
            info[f"{prefix}Size"] = "0"  # requests are handled as they arrive: no queue builds up
            info[capacity_key] = str(capacity)
            info[f"{prefix}HeadWaitTimeMills"] = "0"
        return info

    def _flushed(self) -> int:
        """The commit log's flushed offset (``remainHowManyDataToFlush`` is the max offset minus it)."""
        return int(self.broker.store.commit_log.queue.flushed_offset)

    def get_broker_runtime_info(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=KVTable(self.runtime_info()).encode())

    # -- configuration ---------------------------------------------------------------------------

    def config_properties(self) -> dict[str, str]:
        """Java's keys and defaults, overridden by the broker's and the store's actual settings."""
        broker = self.broker
        props = java_defaults()
        release_keys = broker.config.followed.extra_config()
        props.update(release_keys)
        store_config = broker.store.config
        for field in dataclasses.fields(store_config):
            value = getattr(store_config, field.name)
            key = camel_case(field.name)
            key = STORE_KEY_SPELLING.get(key, key)
            if key in props:  # a setting of ours alone (preallocate) is not a key of Java's answer
                props[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        props.update(broker.config.to_properties())
        for key in KEYS_SINCE_55:
            if key not in release_keys:
                props.pop(key, None)
        del props[START_ONLY_KEY]  # a key of ours alone, not of Java's answer
        props["storePathCommitLog"] = store_config.commit_log_dir
        if not props.get("rocketmqHome"):
            props["rocketmqHome"] = rocketmq_home()
        if "haListenPort" not in broker.config.extra and broker.config.ha_listen_port == 10912:
            props["haListenPort"] = str(broker.config.listen_port + DEFAULT_HA_PORT_OFFSET)
        props.setdefault("configBlackList", CONFIG_BLACK_LIST)
        return props

    def get_broker_config(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        text = format_properties(self.config_properties())
        version = fastjson.dumps(self.broker.topics.data_version.to_obj()).decode()
        return request.make_response(ResponseCode.SUCCESS, header={"version": version}, body=text.encode())

    def update_broker_config(
        self, ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        if not request.body:
            return request.make_response(ResponseCode.SUCCESS)
        try:
            props = parse_properties(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise RocketMQError(
                f"string2Properties error: {err}", response_code=ResponseCode.SYSTEM_ERROR
            ) from err
        logger.info("updateBrokerConfig, new config: %s client: %s", props, ctx.connection.remote_addr)
        config = self.broker.config
        black_list = config.extra.get("configBlackList", CONFIG_BLACK_LIST).split(";")
        if any(key in black_list for key in props):
            raise RocketMQError(
                "Can not update config in black list.", response_code=ResponseCode.NO_PERMISSION
            )
        applied = {JAVA_KEY_ALIASES.get(k, k): v for k, v in props.items() if k != START_ONLY_KEY}
        if START_ONLY_KEY in props:
            logger.info("updateBrokerConfig: %s is persisted, applied at the next start", START_ONLY_KEY)
        try:
            unknown = apply_properties(config, applied)
            unknown = apply_properties(self.broker.store.config, unknown)
        except ValueError as err:
            raise RocketMQError(str(err), response_code=ResponseCode.SYSTEM_ERROR) from err
        config.extra.update(unknown)
        if "brokerPermission" in props:
            # Java bumps the topic data version and re-registers: a topics change does both here.
            self.broker.topics._changed([])
        self._persist(props)
        return request.make_response(ResponseCode.SUCCESS)

    def _persist(self, props: dict[str, str]) -> None:
        """Merge the updated keys into the broker's configuration file (``Configuration.persist``)."""
        config = self.broker.config
        default = Path(self.broker.store.config.store_path_root_dir) / "config" / "broker.properties"
        path = Path(config.extra.get("brokerConfigPath") or default)
        try:
            current = parse_properties(path.read_text(encoding="utf-8")) if path.exists() else {}
            current.update(props)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(format_properties(current), encoding="utf-8")
            tmp.replace(path)
        except OSError as err:
            logger.error("could not persist the broker configuration to %s: %s", path, err)

    # -- statistics ------------------------------------------------------------------------------

    def view_broker_stats_data(
        self, _ctx: RequestContext, request: RemotingCommand, header: ViewBrokerStatsDataRequestHeader
    ) -> RemotingCommand:
        item = self.stats.item(header.stats_name, header.stats_key)
        if item is None:
            raise RocketMQError(
                f"The stats <{header.stats_name}> <{header.stats_key}> not exist",
                response_code=ResponseCode.SYSTEM_ERROR,
            )
        now = self.stats.clock()
        body = {}
        for window, name in enumerate(("statsMinute", "statsHour", "statsDay")):
            snap = item.snapshot(window, now)
            body[name] = {"avgpt": snap.avgpt, "sum": snap.sum, "tps": snap.tps}
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    def consume_stats(self, group: str, topic: str) -> tuple[bytes, int]:
        """One ``ConsumeStats`` (fastjson object keys) of the group on a topic, and its total diff."""
        broker, store = self.broker, self.broker.store
        config = broker.topics.select(topic)
        entries, diff = [], 0
        for queue_id in range(config.write_queue_nums if config is not None else 0):
            broker_offset = max(store.get_max_offset_in_queue(topic, queue_id), 0)
            consumer_offset = max(broker.offsets.query(group, topic, queue_id), 0)
            wrapper: dict[str, Any] = {"brokerOffset": broker_offset, "consumerOffset": consumer_offset}
            if consumer_offset > 0:
                last = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
                if last > 0:
                    wrapper["lastTimestamp"] = last
            wrapper.setdefault("lastTimestamp", 0)
            wrapper["pullOffset"] = consumer_offset
            diff += broker_offset - consumer_offset
            key = {"brokerName": broker.config.broker_name, "queueId": queue_id, "topic": topic}
            entries.append((key, wrapper))
        tps = self.stats.group_get_tps(group, topic)
        body = b'{"consumeTps":' + java_double(tps).encode() + b',"offsetTable":'
        return body + fastjson.dumps_object_keys(entries) + b"}", diff

    def get_broker_consume_stats(
        self, _ctx: RequestContext, request: RemotingCommand, _header: Any
    ) -> RemotingCommand:
        """``ConsumeStatsList``: for every subscription group, the stats of each topic it has offsets on."""
        broker = self.broker
        is_order = (request.ext_fields or {}).get("isOrder", "false").lower() == "true"
        groups, total = [], 0
        for group in list(broker.groups.table):
            stats = []
            info = broker.clients.consumers.get(group)
            for topic in broker.offsets.topics_of_group(group):
                config = broker.topics.select(topic)
                if config is None or (is_order and not config.order):
                    continue
                if info is not None and info.subscriptions and topic not in info.subscriptions:
                    continue
                body, diff = self.consume_stats(group, topic)
                stats.append(body)
                total += diff
            groups.append(fastjson.dumps(group) + b":[" + b",".join(stats) + b"]")
        body = (
            b'{"brokerAddr":' + fastjson.dumps(broker.config.broker_addr)
            + b',"consumeStatsList":[' + b",".join(b"{" + g + b"}" for g in groups) + b"]"
            + b',"totalDiff":' + str(total).encode() + b',"totalInflightDiff":0}'
        )  # fmt: skip
        return request.make_response(ResponseCode.SUCCESS, body=body)
