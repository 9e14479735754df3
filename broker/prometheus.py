"""Prometheus metrics with RocketMQ 5's names and labels (``BrokerMetricsManager``,
``BrokerMetricsConstant``, ``RemotingMetricsManager``), served by the official
``prometheus_client`` library so that existing RocketMQ Grafana dashboards work.

Off by default; ``metricsExporterType=PROM`` serves ``/metrics`` on
``metricsPromExporterHost``:``metricsPromExporterPort`` (5557) from the library's HTTP thread.
:mod:`broker.metrics` imports this module only then: ``prometheus_client`` (with ``http.server``)
is about a tenth of the gateway's start-up imports.

* Counters, fed by :class:`broker.stats.BrokerStats` observers on the broker's thread:
  ``rocketmq_messages_in_total`` / ``rocketmq_throughput_in_total`` (topic, message_type,
  is_system; puts to retry and dead-letter topics are not counted, as Java's
  ``SendMessageProcessor`` leaves them out; ``message_type`` as :func:`message_type`),
  ``rocketmq_messages_out_total`` / ``rocketmq_throughput_out_total`` (topic, consumer_group,
  is_retry, is_system), the ``rocketmq_message_size`` histogram, and the
  ``rocketmq_rpc_latency_milliseconds`` histogram (protocol_type, request_code, response_code,
  is_long_polling, result; code names in lower case) of every request the dispatcher answers,
  and of every gRPC request (``protocol_type="grpc"``, the RPC's name in snake case as
  request_code, the response's ``apache.rocketmq.v2.Code`` or the ending gRPC status as
  response_code; the gRPC door tells :meth:`BrokerMetrics.on_grpc_request` of each, see
  :mod:`broker.grpc.observe`). Names, labels and buckets are those the Java broker's
  OpenTelemetry exporter produces; Java's Proxy records no gRPC latency, the ``grpc`` series are
  this broker's own.
* Gauges, computed on the broker's thread at most once a second while requests flow and read by
  the HTTP thread as an immutable snapshot (the broker's tables are not thread-safe):
  ``rocketmq_consumer_lag_messages``, ``rocketmq_consumer_lag_latency_milliseconds``,
  ``rocketmq_consumer_inflight_messages``, ``rocketmq_consumer_queueing_latency_milliseconds``,
  ``rocketmq_consumer_ready_messages``, ``rocketmq_producer_connections``,
  ``rocketmq_consumer_connections``, ``rocketmq_topic_number``,
  ``rocketmq_consumer_group_number``, ``rocketmq_broker_permission``, and the store's
  (``DefaultStoreMetricsManager``): ``rocketmq_storage_size_bytes`` (used bytes of the file system
  of the store root), ``rocketmq_storage_flush_behind_bytes``,
  ``rocketmq_storage_dispatch_behind_bytes`` (always 0: a put dispatches its consume-queue and
  index entries before it returns), ``rocketmq_storage_message_reserve_time_milliseconds`` (age of
  the oldest stored message). A gauge with a unit carries it in its name, as Java's OpenTelemetry
  Prometheus exporter appends it.

Every series carries ``cluster``, ``node_type="broker"`` and ``node_id`` (the broker name), the
attributes Java's exporter adds to every metric; the connection gauges also carry
``protocol_type="remoting"``, and the consumer gauges ``is_system`` (a system topic, or a group
named ``CID_RMQ_SYS_…``), as Java's.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.controller import BrokerController
from broker.stats import BrokerStats
from codec.codes import language_name, request_code_name, response_code_name
from codec.command import RemotingCommand
from codec.properties import DELAY, REAL_TOPIC, TRAN_MSG
from codec.versions import version_desc
from gateway.transport.dispatch import Dispatcher, RequestContext
from store.dispatch import SCHEDULE_TOPIC

logger = logging.getLogger(__name__)

GAUGE_REFRESH_S = 1.0  # how stale a scraped gauge may be while the broker is busy
MESSAGE_SIZE_BUCKETS = (1024, 4096, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)  # bytes
RPC_LATENCY_BUCKETS_MS = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)  # RemotingMetricsManager (ms)
BASE_LABELS = ("cluster", "node_type", "node_id")
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SCHEDULE_CONSUMER = "SCHEDULE_CONSUMER"  # MixAll.SCHEDULE_CONSUMER_GROUP
SYSTEM_GROUP_PREFIX = "cid_rmq_sys_"  # MixAll.CID_RMQ_SYS_PREFIX, compared in lower case
SHARDING_KEY = "__SHARDINGKEY"  # MessageConst.PROPERTY_SHARDING_KEY
# MessageConst's start-deliver-time, delay level and the three timer properties
DELAY_KEYS = ("__STARTDELIVERTIME", DELAY, "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
PROTOCOL_TYPE = "remoting"  # MetricsConstant.PROTOCOL_TYPE_REMOTING
GRPC_PROTOCOL_TYPE = "grpc"  # the gRPC door's requests (no Java constant: the Proxy records none)


class BrokerMetrics:
    """The metrics of one broker; see the module docstring. The broker's lifecycle calls
    :meth:`serve` once its store is open and :meth:`close` when it stops."""

    def __init__(self, broker: BrokerController, stats: BrokerStats) -> None:
        self.broker = broker
        config = broker.config
        self.base = {
            "cluster": config.broker_cluster_name,
            "node_type": "broker",
            "node_id": config.broker_name,
        }
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        in_labels = (*BASE_LABELS, "topic", "message_type", "is_system")
        out_labels = (*BASE_LABELS, "topic", "consumer_group", "is_system")
        self.messages_in = Counter("rocketmq_messages_in", "Messages received", in_labels, registry=reg)
        self.throughput_in = Counter("rocketmq_throughput_in", "Bytes received", in_labels, registry=reg)
        self.messages_out = Counter("rocketmq_messages_out", "Messages delivered", out_labels, registry=reg)
        self.throughput_out = Counter("rocketmq_throughput_out", "Bytes delivered", out_labels, registry=reg)
        self.message_size = Histogram(
            "rocketmq_message_size", "Size of messages received", in_labels,
            buckets=MESSAGE_SIZE_BUCKETS, registry=reg,
        )  # fmt: skip
        self.rpc_latency = Histogram(
            "rocketmq_rpc_latency_milliseconds", "Request processing time (ms)",
            ("protocol_type", "request_code", "response_code", "is_long_polling", "result", *BASE_LABELS),
            buckets=RPC_LATENCY_BUCKETS_MS, registry=reg,
        )  # fmt: skip
        self._gauges: tuple[GaugeMetricFamily, ...] = ()
        self._next_refresh = 0.0
        reg.register(_Snapshot(self))
        stats.put_observers.append(self.on_put)
        stats.get_observers.append(self.on_get)
        self.server: Any = None
        self.port = 0

    # -- counters --------------------------------------------------------------------------------

    def on_put(self, topic: str, count: int, size: int, properties: Mapping[str, str]) -> None:
        """A put: a send (not to a retry or dead-letter topic, as ``SendMessageProcessor``), or a
        delayed message delivered by the schedule service, which Java counts as read from the
        schedule topic by ``SCHEDULE_CONSUMER`` and received as ``delay`` on its own topic
        (``ScheduleMessageService.PutResultProcess.onSuccess``)."""
        delivered = topic != SCHEDULE_TOPIC and DELAY in properties and REAL_TOPIC in properties
        if delivered:
            self.on_get(SCHEDULE_TOPIC, SCHEDULE_CONSUMER, count, size)
        elif topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):  # BrokerMetricsManager.isRetryOrDlqTopic
            self.maybe_refresh()
            return
        labels = {
            **self.base,
            "topic": topic,
            "message_type": "delay" if delivered else message_type(properties),
            "is_system": _flag(self.broker.topics.is_system(topic)),
        }
        self.messages_in.labels(**labels).inc(count)
        self.throughput_in.labels(**labels).inc(size)
        histogram = self.message_size.labels(**labels)
        for _ in range(count):
            histogram.observe(size / count)
        self.maybe_refresh()

    def on_get(self, topic: str, group: str, count: int, size: int) -> None:
        labels = {
            **self.base,
            "topic": topic,
            "consumer_group": group,
            "is_system": _flag(self.broker.topics.is_system(topic) or _system_group(group)),
        }
        self.messages_out.labels(**labels).inc(count)
        self.throughput_out.labels(**labels).inc(size)

    def observe_dispatcher(self, dispatcher: Dispatcher) -> None:
        """Time every request ``dispatcher`` answers (``rocketmq_rpc_latency``)."""
        dispatcher.observers.append(self.on_request)

    def on_request(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        response: RemotingCommand | None,
        elapsed_ms: float,
    ) -> None:
        self.rpc_latency.labels(
            protocol_type=PROTOCOL_TYPE,
            request_code=request_code_name(request.code).lower(),
            response_code=response_code_name(response.code).lower() if response is not None else "success",
            is_long_polling=_flag(ctx.suspended),
            result="oneway" if request.is_oneway else "success",
            **self.base,
        ).observe(elapsed_ms)
        self.maybe_refresh()

    def on_grpc_request(
        self, method: str, response_code: str, long_polling: bool, result: str, elapsed_ms: float
    ) -> None:
        """A gRPC request answered (``broker.grpc.observe.CallObserver``): labels as a remoting
        request's, with ``protocol_type="grpc"``."""
        self.rpc_latency.labels(
            protocol_type=GRPC_PROTOCOL_TYPE,
            request_code=method,
            response_code=response_code,
            is_long_polling=_flag(long_polling),
            result=result,
            **self.base,
        ).observe(elapsed_ms)
        self.maybe_refresh()

    # -- gauges ----------------------------------------------------------------------------------

    def maybe_refresh(self) -> None:
        now = time.monotonic()
        if now >= self._next_refresh:
            self._next_refresh = now + GAUGE_REFRESH_S
            self.refresh()

    def refresh(self) -> None:
        """Compute every gauge on the broker's thread and publish them as one snapshot."""
        broker, base = self.broker, self.base
        names = [*self.base, "topic", "consumer_group", "is_retry", "is_system"]
        lag = GaugeMetricFamily("rocketmq_consumer_lag_messages", "Messages not yet consumed", labels=names)
        lag_latency = GaugeMetricFamily(
            "rocketmq_consumer_lag_latency_milliseconds", "Age of the oldest unconsumed message (ms)",
            labels=names,
        )  # fmt: skip
        inflight = GaugeMetricFamily(
            "rocketmq_consumer_inflight_messages", "Pulled, not committed", labels=names
        )
        queueing = GaugeMetricFamily(
            "rocketmq_consumer_queueing_latency_milliseconds", "Age of the next message to pull (ms)",
            labels=names,
        )  # fmt: skip
        ready = GaugeMetricFamily("rocketmq_consumer_ready_messages", "Messages ready to pull", labels=names)
        now_ms = int(time.time() * 1000)
        store = broker.store
        for key, queues in list(broker.offsets.table.items()):
            topic, _, group = key.partition("@")
            values = [
                *base.values(),
                topic,
                group,
                _flag(topic.startswith(RETRY_PREFIX)),
                _flag(self.broker.topics.is_system(topic) or _system_group(group)),
            ]
            total, oldest = 0, 0
            for queue_id, offset in list(queues.items()):
                behind = max(store.get_max_offset_in_queue(topic, queue_id) - max(offset, 0), 0)
                total += behind
                if behind:
                    stored = store.get_message_store_timestamp(topic, queue_id, max(offset, 0))
                    if stored > 0:
                        oldest = max(oldest, now_ms - stored)
            for family, value in (
                (lag, total),
                (lag_latency, oldest),
                (inflight, 0),
                (queueing, oldest),
                (ready, total),
            ):
                family.add_metric(values, value)
        producers = GaugeMetricFamily(
            "rocketmq_producer_connections", "Producer connections",
            labels=[*base, "language", "version", "protocol_type"],
        )  # fmt: skip
        channels = [c for chs in list(broker.clients.producers.values()) for c in list(chs.values())]
        for (language, version), count in _connection_counts(channels).items():
            producers.add_metric([*base.values(), language, version, PROTOCOL_TYPE], count)
        consumers = GaugeMetricFamily(
            "rocketmq_consumer_connections", "Consumer connections",
            labels=[*base, "consumer_group", "language", "version", "consume_mode", "protocol_type",
                    "is_system"],
        )  # fmt: skip
        for group, info in list(broker.clients.consumers.items()):
            mode = "push" if info.consume_type == "CONSUME_PASSIVELY" else "pull"
            system = _flag(_system_group(group))
            for (language, version), count in _connection_counts(info.channels.values()).items():
                consumers.add_metric(
                    [*base.values(), group, language, version, mode, PROTOCOL_TYPE, system], count
                )
        scalars = []
        for name, doc, value in (
            ("rocketmq_topic_number", "Topics", len(broker.topics.table)),
            ("rocketmq_consumer_group_number", "Subscription groups", len(broker.groups.table)),
            ("rocketmq_broker_permission", "Broker permission", broker.config.broker_permission),
        ):
            family = GaugeMetricFamily(name, doc, labels=list(base))
            family.add_metric(list(base.values()), value)
            scalars.append(family)
        self._gauges = (
            lag, lag_latency, inflight, queueing, ready, producers, consumers, *scalars,
            *self._storage_gauges(now_ms),
        )  # fmt: skip

    def _storage_gauges(self, now_ms: int) -> list[GaugeMetricFamily]:
        """``DefaultStoreMetricsManager``'s storage gauges (labels storage_type, storage_medium)."""
        broker, store = self.broker, self.broker.store
        names = [*self.base, "storage_type", "storage_medium"]
        values = [*self.base.values(), "local", "disk"]
        figures = [
            ("rocketmq_storage_flush_behind_bytes", "Commit-log bytes not yet flushed",
             max(store.max_phy_offset - store.commit_log.queue.flushed_offset, 0)),
            ("rocketmq_storage_dispatch_behind_bytes", "Commit-log bytes not yet dispatched", 0),
        ]  # fmt: skip
        root = store.config.store_path_root_dir
        if os.path.isdir(root):
            usage = shutil.disk_usage(root)
            figures.append(("rocketmq_storage_size_bytes", "Used bytes of the store's file system",
                            usage.total - usage.free))  # fmt: skip
        earliest = broker.earliest_message_time()
        if earliest > 0:
            figures.append(("rocketmq_storage_message_reserve_time_milliseconds",
                            "Age of the oldest stored message (ms)", now_ms - earliest))  # fmt: skip
        families = []
        for name, doc, value in figures:
            family = GaugeMetricFamily(name, doc, labels=names)
            family.add_metric(values, value)
            families.append(family)
        return families

    # -- serving ---------------------------------------------------------------------------------

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP endpoint; returns the bound port (``port`` 0: any free one)."""
        self.refresh()
        server, _thread = start_http_server(port, host or "0.0.0.0", registry=self.registry)
        self.server = server
        bound = int(server.server_address[1])
        self.port = bound
        logger.info("Prometheus metrics on http://%s:%d/metrics", host or "0.0.0.0", bound)
        return bound

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


class _Snapshot(Collector):
    """Hands the HTTP thread the last gauge snapshot."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self.metrics._gauges


def message_type(properties: Mapping[str, str]) -> str:
    """The ``message_type`` label of a received message (``BrokerMetricsManager.getMessageType``):
    ``transaction`` for a prepared transaction message, ``fifo`` with a sharding key (a message
    group), ``delay`` with a delay level, start-deliver time or timer property, else ``normal``."""
    if properties.get(TRAN_MSG, "").lower() == "true":  # Boolean.parseBoolean
        return "transaction"
    if SHARDING_KEY in properties:
        return "fifo"
    if any(key in properties for key in DELAY_KEYS):
        return "delay"
    return "normal"


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _system_group(group: str) -> bool:
    return group.lower().startswith(SYSTEM_GROUP_PREFIX)  # BrokerMetricsManager.isSystemGroup


def _connection_counts(channels: Iterable[Any]) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for channel in list(channels):
        key = (language_name(channel.language).lower(), version_desc(channel.version).lower())
        counts[key] = counts.get(key, 0) + 1
    return counts
