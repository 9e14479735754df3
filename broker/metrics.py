"""Whether the broker exports Prometheus metrics, and its running exporter.

The exporter itself is :mod:`broker.prometheus`; it is imported only when the broker's
``metricsExporterType`` is ``PROM`` (off by default), so a broker without metrics does not load
``prometheus_client`` at start-up.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from broker.stats import BrokerStats
from gateway.transport.dispatch import Dispatcher

if TYPE_CHECKING:
    from broker.prometheus import BrokerMetrics

PROM = "PROM"  # MetricsExporterType.PROM

_EXPORTERS: weakref.WeakKeyDictionary[Any, BrokerMetrics] = weakref.WeakKeyDictionary()


def start_metrics(broker: Any, stats: BrokerStats, dispatcher: Dispatcher) -> BrokerMetrics | None:
    """The exporter when the broker's ``metricsExporterType`` is PROM (else ``None``)."""
    config = broker.config
    if config.metrics_exporter_type.upper() != PROM:
        return None
    from broker.prometheus import BrokerMetrics

    metrics = BrokerMetrics(broker, stats)
    metrics.observe_dispatcher(dispatcher)
    metrics.serve(config.metrics_prom_exporter_host, config.metrics_prom_exporter_port)
    _EXPORTERS[broker] = metrics
    return metrics


def exporter_of(broker: Any) -> BrokerMetrics | None:
    """The running exporter of a ``BrokerController`` (its port, ``close``), if any."""
    return _EXPORTERS.get(broker)
