"""Whether the broker exports Prometheus metrics, and the exporter when it does.

The exporter itself is :mod:`broker.prometheus`; it is imported only when the broker's
``metricsExporterType`` is ``PROM`` (off by default), so a broker without metrics does not load
``prometheus_client`` at start-up. The broker's composition (:class:`broker.app.Broker`) creates
the exporter with :func:`create_metrics`, serves it once the store is open and closes it when the
broker stops, as Java's ``BrokerController`` initializes its ``BrokerMetricsManager`` and starts
and shuts it down with the broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.controller import BrokerController
from broker.stats import BrokerStats
from gateway.transport.dispatch import Dispatcher

if TYPE_CHECKING:
    from broker.prometheus import BrokerMetrics

PROM = "PROM"  # MetricsExporterType.PROM


def create_metrics(
    broker: BrokerController, stats: BrokerStats, dispatcher: Dispatcher
) -> BrokerMetrics | None:
    """The exporter of ``broker`` when its ``metricsExporterType`` is PROM (else ``None``), fed by
    ``stats`` and timing every request ``dispatcher`` answers; not yet serving (``serve``)."""
    if broker.config.metrics_exporter_type.upper() != PROM:
        return None
    from broker.prometheus import BrokerMetrics

    metrics = BrokerMetrics(broker, stats)
    metrics.observe_dispatcher(dispatcher)
    return metrics
