"""Apache rocketmq-dashboard (its newest release, built by ``scripts/setup-dashboard.sh``) in
headless Chromium against our gateway AND the real 5.3.3 broker.

Both targets get the same traffic: topics of each ``message.type`` (NORMAL, FIFO, DELAY,
TRANSACTION) created with ``mqadmin updateTopic -a``, messages with keys and tags on a traffic
topic, and a push consumer group consuming them. A dashboard per target and VIP setting
(``rocketmq.config.isVIPChannel``: on, the dashboard's default, and off) is then visited and what
its pages show, minus what depends on timing or addresses, must be the same for both brokers.
A screenshot of every page visited is saved under ``$CI_ARTIFACTS/dashboard/<target>-vip-<on|off>/``
(default ``build/artifacts``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from compat_tests import dashboard
from compat_tests.helpers import STEP_S, TARGETS
from compat_tests.reference import run_mqadmin
from compat_tests.scenario import CLIENT_LINES, of, run_scenario
from compat_tests.targets import Target, start_target

pytestmark = [pytest.mark.compat, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("CI_ARTIFACTS", REPO / "build" / "artifacts")) / "dashboard"
LINE = CLIENT_LINES[-1]
TRAFFIC_TOPIC = "DashTraffic"
GROUP = "dashGroup"
COUNT = 12
#: The topic of each ``message.type`` the dashboard's topic page filters by.
TYPED_TOPICS = {"NORMAL": "DashNormal", "DELAY": "DashDelay", "FIFO": "DashFifo", "TRANSACTION": "DashTx"}
#: The type check boxes of the topic page, in the order it draws them (``pages/Topic/topic.jsx``).
TYPE_BOXES = ("NORMAL", "DELAY", "FIFO", "TRANSACTION", "UNSPECIFIED", "RETRY", "DLQ", "SYSTEM")

#: Per target, per page: the values shown.
Views = dict[str, dict[str, Any]]


def send_traffic(target: Target, home: Path) -> None:
    naddr = target.namesrv_addr
    for kind, topic in TYPED_TOPICS.items():
        out = run_mqadmin(
            naddr,
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            topic,
            "-a",
            f"+message.type={kind}",
            home=home,
        )
        assert "success" in out, out
    out = run_mqadmin(naddr, "updateTopic", "-c", "DefaultCluster", "-t", TRAFFIC_TOPIC, home=home)
    assert "success" in out, out
    events = run_scenario(
        LINE,
        "produce",
        naddr,
        home,
        STEP_S,
        topic=TRAFFIC_TOPIC,
        count=COUNT,
        tags="TagA,TagB",
        keys_prefix="dk-",
    )
    assert len(of(events, "sent")) == COUNT, of(events, "send_error")[:3]
    received = run_scenario(
        LINE, "consume", naddr, home, STEP_S, topic=TRAFFIC_TOPIC, group=GROUP, expect=COUNT
    )
    assert len(of(received, "received")) >= COUNT


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Both brokers, each with the same traffic sent (a missing dashboard build fails first)."""
    why = dashboard.missing()
    if why is not None:
        pytest.fail(why)
    started: dict[str, Target] = {}
    try:
        for name in TARGETS:
            started[name] = start_target(name, tmp_path_factory.mktemp(name))
            send_traffic(started[name], tmp_path_factory.mktemp(f"clients-{name}"))
        yield started
    finally:
        for target in started.values():
            target.stop()


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    chrome = dashboard.browser(tmp_path_factory.mktemp("chromium"))
    try:
        yield chrome
    finally:
        chrome.quit()


def shot(driver: webdriver.Chrome, target: str, vip: bool, page: str) -> None:
    folder = ARTIFACTS / f"{target}-vip-{'on' if vip else 'off'}"
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{page}.png"))


def tick_only(driver: webdriver.Chrome, kind: str) -> None:
    """Tick the topic page's type box ``kind`` and untick the others."""
    boxes = driver.find_elements(By.CSS_SELECTOR, "form .ant-checkbox-wrapper")
    assert len(boxes) == len(TYPE_BOXES), dashboard.texts(boxes)
    for name, box in zip(TYPE_BOXES, boxes, strict=True):
        if box.find_element(By.CSS_SELECTOR, "input").is_selected() != (name == kind):
            box.click()


def open_topic_page(driver: webdriver.Chrome, base_url: str, filter_text: str) -> None:
    driver.get(base_url + "/#/topic")
    box = dashboard.poll(
        "topic filter", lambda: driver.find_elements(By.CSS_SELECTOR, "form input.ant-input") or None
    )
    # the page may still be the one a visit before left (a hash route): replace its filter text
    box[0].send_keys(Keys.CONTROL, "a")
    box[0].send_keys(Keys.DELETE)
    box[0].send_keys(filter_text)


def topics_by_type(driver: webdriver.Chrome, base_url: str) -> dict[str, list[str]]:
    """The topic page filtered to ``Dash`` with one type box ticked at a time, then every topic
    under SYSTEM: the rows shown."""
    open_topic_page(driver, base_url, "Dash")
    shown: dict[str, list[str]] = {}
    for kind in TYPE_BOXES[:5]:
        tick_only(driver, kind)
        rows = dashboard.settled_rows(driver, ".ant-table-tbody tr.ant-table-row td:first-child")
        shown[kind] = sorted(rows)
    # The broker's own topics, every name (both brokers are broker-a of DefaultCluster).
    open_topic_page(driver, base_url, "")
    tick_only(driver, "SYSTEM")
    shown["SYSTEM"] = sorted(
        dashboard.settled_rows(driver, ".ant-table-tbody tr.ant-table-row td:first-child")
    )
    return shown


def cells_of(driver: webdriver.Chrome, selector: str) -> list[list[str]]:
    """The cell texts of the rows matching ``selector``, read in one script run (a table that
    re-renders meanwhile leaves no stale elements behind)."""
    script = (
        "return Array.from(document.querySelectorAll(arguments[0]), row =>"
        " Array.from(row.querySelectorAll('td'), td => td.innerText.trim()));"
    )
    cells: list[list[str]] = driver.execute_script(script, selector)
    return cells


def topic_status(driver: webdriver.Chrome, base_url: str) -> list[list[str]]:
    """The traffic topic's Status dialog (queue, min and max offset; not the update time)."""
    open_topic_page(driver, base_url, TRAFFIC_TOPIC)
    tick_only(driver, "UNSPECIFIED")
    rows = dashboard.settled_rows(driver, ".ant-table-tbody tr.ant-table-row td:first-child")
    assert rows == [TRAFFIC_TOPIC], rows
    driver.find_element(By.CSS_SELECTOR, ".ant-table-tbody tr.ant-table-row button").click()
    selector = ".ant-modal .ant-table-tbody tr.ant-table-row"
    dashboard.poll("status dialog", lambda: driver.find_elements(By.CSS_SELECTOR, selector) or None)
    dashboard.settled_rows(driver, selector)
    cells = cells_of(driver, selector)
    return sorted(row[:3] for row in cells)


def table(driver: webdriver.Chrome, base_url: str, page: str, filter_text: str = "") -> list[list[str]]:
    """The cells of the table a page shows (``filter_text`` typed into its search box first)."""
    driver.get(f"{base_url}/#/{page}")
    if filter_text:
        box = dashboard.poll(
            "search box", lambda: driver.find_elements(By.CSS_SELECTOR, "input.ant-input") or None
        )
        box[0].send_keys(filter_text)
    dashboard.settled_rows(driver, ".ant-table-tbody tr.ant-table-row")
    return cells_of(driver, ".ant-table-tbody tr.ant-table-row")


def visit(driver: webdriver.Chrome, base_url: str, target: str, vip: bool) -> dict[str, Any]:
    """Every page compared, as the values shown; a screenshot of each."""
    seen: dict[str, Any] = {}
    seen["topic-types"] = topics_by_type(driver, base_url)
    shot(driver, target, vip, "topic")
    seen["topic-status"] = topic_status(driver, base_url)
    shot(driver, target, vip, "topic-status")
    # split, broker id (master/slave), address, version, TPS and counts: the first two and version
    seen["cluster"] = [[row[0], row[1], row[3]] for row in table(driver, base_url, "cluster")]
    shot(driver, target, vip, "cluster")
    # group, client count, version, consume type, model, TPS, lag, update time: all but TPS and time
    seen["consumer"] = [row[:5] + row[6:7] for row in table(driver, base_url, "consumer", "dash")]
    shot(driver, target, vip, "consumer")
    return seen


@pytest.fixture(scope="module", params=[True, False], ids=["vip-on", "vip-off"])
def views(
    request: pytest.FixtureRequest,
    targets: dict[str, Target],
    driver: webdriver.Chrome,
    tmp_path_factory: pytest.TempPathFactory,
) -> Views:
    """What the dashboard shows for each target, VIP channel on (its default) or off."""
    vip: bool = request.param
    seen: Views = {}
    for name, target in targets.items():
        workdir = tmp_path_factory.mktemp(f"dashboard-{name}")
        board = dashboard.Dashboard(workdir, target.namesrv_addr, vip_channel=vip)
        try:
            seen[name] = visit(driver, board.base_url, name, vip)
        finally:
            board.stop()
    return seen


def test_topic_page_types(views: Views) -> None:
    """The topic page's type filters list each ``message.type`` topic under its own type, the
    traffic topic (no attribute) under UNSPECIFIED, and the system topics, the same on both."""
    assert views["reference"]["topic-types"]["FIFO"] == ["DashFifo"], views["reference"]
    assert "SCHEDULE_TOPIC_XXXX" in views["reference"]["topic-types"]["SYSTEM"], views["reference"]
    assert views["gateway"]["topic-types"] == views["reference"]["topic-types"]


def test_topic_status_dialog(views: Views) -> None:
    """Queues of the traffic topic with their min offsets, and every message sent counted in the
    max offsets (how the producer spread them over the queues is its own random start)."""

    def summary(rows: list[list[str]]) -> tuple[list[list[str]], int]:
        return [row[:2] for row in rows], sum(int(row[2]) for row in rows)

    assert summary(views["reference"]["topic-status"])[1] == COUNT, views["reference"]
    assert summary(views["gateway"]["topic-status"]) == summary(views["reference"]["topic-status"])


def test_cluster_page(views: Views) -> None:
    """One master broker of the same name and version."""
    assert len(views["reference"]["cluster"]) == 1, views["reference"]
    assert views["gateway"]["cluster"] == views["reference"]["cluster"]


def test_consumer_page(views: Views) -> None:
    """The consumer group that consumed the traffic: clients, type, model and lag."""
    assert [row[0] for row in views["reference"]["consumer"]] == [GROUP], views["reference"]
    assert views["gateway"]["consumer"] == views["reference"]["consumer"]
