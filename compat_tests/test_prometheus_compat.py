"""The Grafana dashboard ``docker/grafana/rocketmq-gateway.json`` evaluated by a real Prometheus
scraping our gateway AND the real Apache RocketMQ 5.3.3 broker, both with
``metricsExporterType=PROM``.

For each target: the broker starts with its exporter on a free loopback port; a Prometheus server
(Debian's ``prometheus`` package, ``/usr/bin/prometheus``, installed by
``scripts/setup-prometheus.sh``) starts with its own configuration and store in a temporary
directory on a free loopback port, scraping that exporter every second; a push consumer (5.3.3
client) stays online while a producer sends a bounded load (normal messages, then delayed ones).
Every expression of the dashboard's panels, and every template variable's ``label_values`` query,
is then evaluated through Prometheus's HTTP API (``/api/v1/query``) with the variables set as a
user picking the broker would, polling until each returns data or a deadline passes. The consumer
(its client's inner producer registers as a producer too) stays online until then, so the
connection gauges have something to count.

The real broker's answers make the dashboard known right: an expression that returns nothing on
the real broker queries a name or label the 5.x broker does not serve. Where the two return
different label sets, each difference is written to ``label-differences.json`` in the test's
temporary directory and printed.

The dashboard's variables: ``$datasource`` (Grafana picks it), ``$cluster`` and ``$broker``
(regex matchers over ``cluster`` and ``node_id``) and Grafana's ``$__rate_interval``, set here to
one minute (what Grafana computes for the usual 15 s scrape interval).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from compat_tests.reference import free_port
from compat_tests.scenario import CLIENT_LINES, of, run_scenario, start_scenario
from compat_tests.targets import REPO, start_target

pytestmark = [pytest.mark.compat, pytest.mark.slow]

TARGETS = ("gateway", "reference")
PROMETHEUS = Path("/usr/bin/prometheus")
DASHBOARD = REPO / "docker" / "grafana" / "rocketmq-gateway.json"
LINE = CLIENT_LINES[-1]
TOPIC, GROUP = "PromTopic", "promGroup"
FIRST, SECOND, DELAYED = 100, 200, 20  # messages of the load: normal, normal, delay level 1 (1 s)
STEP_S = 90.0  # the Java scenario's own timeout per step
READY_TIMEOUT_S = 60.0  # Prometheus answering /-/ready
SCRAPED_TIMEOUT_S = 30.0  # a new series reaching Prometheus (1 s scrapes)
EVALUATE_TIMEOUT_S = 60.0  # every expression returning data
QUERY_TIMEOUT_S = 10.0
VARIABLES = {"$__rate_interval": "1m", "$cluster": "DefaultCluster"}
SETTLED = (  # true once the load's counters have been scraped a few times after it ended
    f'count_over_time(rocketmq_messages_in_total{{topic="{TOPIC}",message_type="delay"}}[1m]) >= 3',
    f'count_over_time(rocketmq_messages_out_total{{consumer_group="{GROUP}"}}[1m]) >= 3',
)
NOT_INSTALLED = (
    f"{PROMETHEUS} is missing: the dashboard test needs Debian's prometheus package "
    "(bash scripts/setup-prometheus.sh installs it without starting its daemon)"
)


@dataclass(frozen=True)
class Query:
    where: str  # panel title and refId, or the template variable
    expr: str  # PromQL with the dashboard's variables
    label: str | None = None  # label_values(...) queries: the label that must be present


def dashboard_queries() -> list[Query]:
    """Every panel target's expression, then every ``label_values`` template query."""
    board = json.loads(DASHBOARD.read_text())
    found = [
        Query(f"{panel['title']} [{target['refId']}]", target["expr"])
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]
    for var in board["templating"]["list"]:
        if var["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", var["definition"].strip())
        assert match, f"variable {var['name']}: not a label_values() query: {var['definition']}"
        found.append(Query(f"variable ${var['name']}", match.group(1), match.group(2)))
    return found


def resolve(expr: str, broker_name: str) -> str:
    """``expr`` with the dashboard's variables set as a user picking this broker would."""
    values = {**VARIABLES, "$broker": broker_name}
    for name in sorted(values, key=len, reverse=True):  # $__rate_interval before shorter names
        expr = expr.replace(name, values[name])
    assert "$" not in expr, f"an unknown variable in {expr}"
    return expr


class PrometheusServer:
    """``/usr/bin/prometheus`` scraping one exporter every second, from a temporary directory."""

    def __init__(self, workdir: Path, metrics_port: int) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(("127.0.0.1",))
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: rocketmq\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{metrics_port}']\n"
        )
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    str(PROMETHEUS),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=workdir,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text()[-2000:]
                raise RuntimeError(f"prometheus exited ({self.proc.returncode}): {tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"prometheus not ready within {READY_TIMEOUT_S} s: {self.log.read_text()[-2000:]}")

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now (``/api/v1/query``)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=QUERY_TIMEOUT_S) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", (expr, body)
        assert body["data"]["resultType"] == "vector", (expr, body["data"]["resultType"])
        return list(body["data"]["result"])

    def wait_for(self, expr: str, timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while not (result := self.query(expr)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return result

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class Evaluation:
    """What the dashboard's queries returned on one target: each query's series (label dicts and
    values), by ``Query.where``."""

    name: str
    broker_name: str = ""
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def has_data(query: Query, result: list[dict[str, Any]]) -> bool:
    """A series with a finite value (and, for ``label_values``, the label)."""
    return any(
        math.isfinite(float(series["value"][1])) and (query.label is None or query.label in series["metric"])
        for series in result
    )


def evaluate(prometheus: PrometheusServer, broker_name: str) -> dict[str, list[dict[str, Any]]]:
    """Every query's result once all of them return data (or the deadline passed): the last
    pass evaluates them all at about the same time, so the two targets' answers compare."""
    queries = dashboard_queries()
    deadline = time.monotonic() + EVALUATE_TIMEOUT_S
    while True:
        results = {q.where: prometheus.query(resolve(q.expr, broker_name)) for q in queries}
        if all(has_data(q, results[q.where]) for q in queries) or time.monotonic() >= deadline:
            return results
        time.sleep(1.0)


def exercise(name: str, workdir: Path) -> Evaluation:
    """Start the target and a Prometheus, run the load, evaluate every query."""
    metrics_port = free_port(("127.0.0.1",))
    conf = {
        "metricsExporterType": "PROM",
        "metricsPromExporterHost": "127.0.0.1",
        "metricsPromExporterPort": str(metrics_port),
    }
    target = start_target(name, workdir / "servers", conf)
    prometheus: PrometheusServer | None = None
    home = workdir / "home"
    consumer = None
    try:
        prometheus = PrometheusServer(workdir / "prometheus", metrics_port)
        up = prometheus.wait_for("rocketmq_broker_permission", SCRAPED_TIMEOUT_S)
        assert up, f"{name}: Prometheus never scraped rocketmq_broker_permission from :{metrics_port}"
        evaluation = Evaluation(name, broker_name=up[0]["metric"]["node_id"])
        naddr = target.namesrv_addr
        # The first send creates the topic, so the consumer started next finds its route at once.
        sent = of(run_scenario(LINE, "produce", naddr, home, STEP_S, topic=TOPIC, count=FIRST), "sent")
        consumer = start_scenario(LINE, "consume", naddr, home, 300, topic=TOPIC, group=GROUP, duration=240)
        # The counters exist now: the rest of the load lands after some scrapes of them, so every
        # rate of the dashboard has an increase to show.
        assert prometheus.wait_for(f'rocketmq_messages_in_total{{topic="{TOPIC}"}}', SCRAPED_TIMEOUT_S)
        sent += of(run_scenario(LINE, "produce", naddr, home, STEP_S, topic=TOPIC, count=SECOND), "sent")
        sent += of(
            run_scenario(LINE, "produce", naddr, home, STEP_S, topic=TOPIC, count=DELAYED, delay_level=1),
            "sent",
        )
        deadline = time.monotonic() + STEP_S
        while len({e["uid"] for e in of(consumer.events(), "received")}) < len(sent):
            assert time.monotonic() < deadline, f"{name}: the consumer did not get all {len(sent)} messages"
            time.sleep(0.5)
        # A rate needs two samples of a series: wait until the load's counters have a few.
        for settled in SETTLED:
            assert prometheus.wait_for(settled, SCRAPED_TIMEOUT_S), f"{name}: never true: {settled}"
        evaluation.results = evaluate(prometheus, evaluation.broker_name)
        (workdir / "results.json").write_text(json.dumps(evaluation.results, indent=1, sort_keys=True))
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=QUERY_TIMEOUT_S) as r:
            (workdir / "metrics.txt").write_bytes(r.read())  # the exporter's own text, to read beside
        return evaluation
    finally:
        if consumer is not None:
            consumer.stop()
        if prometheus is not None:
            prometheus.stop()
        target.discard()


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Evaluation]]:
    if not PROMETHEUS.exists():
        pytest.fail(NOT_INSTALLED)
    with ThreadPoolExecutor(2) as pool:
        futures = {n: pool.submit(exercise, n, tmp_path_factory.mktemp(f"prom-{n}")) for n in TARGETS}
        yield {n: f.result() for n, f in futures.items()}


def test_prometheus_server_is_installed() -> None:
    assert PROMETHEUS.exists(), NOT_INSTALLED


def test_dashboard_uses_only_native_names_and_a_datasource_variable() -> None:
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    names = {name for q in dashboard_queries() for name in re.findall(r"\b(rocketmq_\w+)", q.expr)}
    exporter_names = {"rocketmq_broker_tps", "rocketmq_producer_tps", "rocketmq_group_diff"}
    assert names
    assert not names & exporter_names


@pytest.mark.parametrize("name", TARGETS)
def test_every_dashboard_query_returns_data(evaluations: dict[str, Evaluation], name: str) -> None:
    evaluation = evaluations[name]
    empty = [q.where for q in dashboard_queries() if not has_data(q, evaluation.results.get(q.where, []))]
    assert not empty, f"{name}: no data for {empty}"


IGNORED_LABELS = frozenset({"__name__", "instance", "job", "otel_scope_name"})  # Prometheus's; OTel's scope
Series = tuple[tuple[str, str], ...]


def label_sets(result: list[dict[str, Any]]) -> set[Series]:
    return {
        tuple(sorted((k, v) for k, v in series["metric"].items() if k not in IGNORED_LABELS))
        for series in result
    }


def label_differences(evaluations: dict[str, Evaluation]) -> dict[str, dict[str, list[Series]]]:
    """Per query, the label sets only one target returned."""
    ours, real = evaluations["gateway"].results, evaluations["reference"].results
    found = {}
    for query in dashboard_queries():
        mine, theirs = label_sets(ours.get(query.where, [])), label_sets(real.get(query.where, []))
        if mine != theirs:
            found[query.where] = {
                "gateway only": sorted(mine - theirs),
                "reference only": sorted(theirs - mine),
            }
    return found


def test_label_sets_agree_with_the_real_broker(
    evaluations: dict[str, Evaluation], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every query returns series with the same label names on both brokers, and the same label
    values except where a value is a request or response code: which periodic client calls
    (offset commits every 5 s, heartbeats every 30 s) fell in the rate window is timing. Every
    difference is written to ``label-differences.json`` and printed."""
    found = label_differences(evaluations)
    report = tmp_path_factory.mktemp("prom-labels") / "label-differences.json"
    report.write_text(json.dumps(found, indent=1, ensure_ascii=False))
    for where, sides in found.items():
        print(f"{where}: {json.dumps(sides, ensure_ascii=False)}")
    ours, real = evaluations["gateway"].results, evaluations["reference"].results
    names = {
        q.where: (label_names(ours.get(q.where, [])), label_names(real.get(q.where, [])))
        for q in dashboard_queries()
        if label_names(ours.get(q.where, [])) != label_names(real.get(q.where, []))
    }
    assert not names, f"label names differ (gateway, reference; report: {report}): {names}"
    values = {
        where: sides
        for where, sides in found.items()
        if not any(name in TIMING_LABELS for side in sides.values() for s in side for name, _ in s)
    }
    assert not values, f"label values differ (report: {report}): {values}"


TIMING_LABELS = frozenset({"request_code", "response_code"})


def label_names(result: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    return {tuple(name for name, _ in series) for series in label_sets(result)}
