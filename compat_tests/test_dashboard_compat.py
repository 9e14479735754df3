"""Apache rocketmq-dashboard (its newest release, built by ``scripts/setup-dashboard.sh``) in
headless Chromium against our gateway AND the real 5.3.3 broker.

Both targets get the same traffic (``compat_tests/dashboard_traffic.py``: topics of each
``message.type``, traced messages with keys and tags consumed by a traced push consumer, a message
dead-lettered by its group, live clients), prepared side by side. A dashboard per target and VIP
setting (``rocketmq.config.isVIPChannel``: on, the dashboard's default, and off) is then visited,
the two targets side by side in a browser each, and what its pages and dialogs show, minus what
depends on timing, addresses or ids, must be the same for both brokers: topic list, Status,
Router, Topic Config, a topic added and deleted in the UI, cluster, consumer groups, CLIENT,
CONSUME DETAIL, Reset Consumer Offset, producer connections, message search by topic and by key
with a message's detail, the Message ID tab (by the UNIQ_KEY id and by the offset id), the DLQ
message page, the message trace page and the home Dashboard tab. A
screenshot of every page and dialog visited is saved under
``$CI_ARTIFACTS/dashboard/<target>-vip-<on|off>/`` (default ``build/artifacts``), and the time
each set-up phase took in ``timings.txt`` there.

What the real broker shows there, ours must show too, including the dashboard's own limits:

* the Message ID tab finds a message by its UNIQ_KEY only: the dashboard's ``MQAdminExtImpl
  .viewMessage`` asks the index for a unique key, so the offset id the send returned gets "Failed
  to query message by Id" on both brokers (compared as such);
* the DLQ page's Consumer tab finds nothing on any broker (its date pickers query midnight to
  midnight, see ``dashboard_search.dlq_message_by_id``): its Message ID tab is compared, and its
  row has no id, tag or key since the page reads the lookup's answer as a message;
* the home tab's topics come from the dashboard's own collection (``DashboardCollectTask
  .collectTopic``, second 30 of every minute, fixed in its source): the tab is visited last, when
  the first collection is usually done; only broker and topic names are compared, not numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from compat_tests import dashboard
from compat_tests import dashboard_pages as pages
from compat_tests import dashboard_search as search
from compat_tests import dashboard_traffic as traffic
from compat_tests.dashboard_topic import (
    cells_of,
    create_and_delete_topic,
    delete_topic,
    topic_config,
    topic_router,
    topic_row,
    topic_status,
    topics_by_type,
)
from compat_tests.dashboard_traffic import (
    COUNT,
    DEAD_GROUP,
    GROUP,
    LIVE_GROUP,
    LIVE_TOPIC,
    PRODUCER_GROUP,
    TRAFFIC_PRODUCER,
    TRAFFIC_TOPIC,
    TYPED_TOPICS,
)
from compat_tests.helpers import TARGETS

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STARTED = time.time()  # before any traffic: the message page's range and the offset reset start here
#: The topic added and deleted in the topic page's Add/Update dialog.
UI_TOPIC = "DashFromUi"
#: The traffic message the key, id and trace searches look for.
KEY = "dk-3"

#: Per target, per page: the values shown.
Views = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, traffic.Site]]:
    """Both brokers, each with the same traffic sent and live clients, prepared side by side (a
    missing dashboard build fails first)."""
    why = dashboard.missing()
    if why is not None:
        pytest.fail(why)
    (dashboard.ARTIFACTS / "timings.txt").unlink(missing_ok=True)  # this run's phases only
    sites: dict[str, traffic.Site] = {}
    tmp_path_factory.getbasetemp()  # created once here: pytest's first creation is not thread-safe
    try:
        with ThreadPoolExecutor(len(TARGETS)) as pool:
            for done in [pool.submit(traffic.prepare, name, tmp_path_factory, sites) for name in TARGETS]:
                done.result()
        yield sites
    finally:
        for site in sites.values():
            site.stop()


@pytest.fixture(scope="module")
def drivers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, webdriver.Chrome]]:
    """A headless Chromium per target: the two targets' dashboards are visited side by side."""
    chromes: dict[str, webdriver.Chrome] = {}
    try:
        for name in TARGETS:
            chromes[name] = dashboard.browser(tmp_path_factory.mktemp(f"chromium-{name}"))
        yield chromes
    finally:
        for chrome in chromes.values():
            chrome.quit()


def shot(driver: webdriver.Chrome, target: str, vip: bool, page: str) -> None:
    folder = dashboard.ARTIFACTS / f"{target}-vip-{'on' if vip else 'off'}"
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{page}.png"))


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


def visit(
    driver: webdriver.Chrome, base_url: str, name: str, vip: bool, site: traffic.Site
) -> dict[str, Any]:
    """Every page compared, as the values shown; a screenshot of each page and dialog."""

    def snap(page: str) -> None:
        shot(driver, name, vip, page)

    seen: dict[str, Any] = {}
    seen["topic-types"] = topics_by_type(driver, base_url)
    snap("topic")
    seen["topic-status"] = topic_status(driver, base_url, TRAFFIC_TOPIC)
    snap("topic-status")
    pages.close_dialog(driver)
    seen["topic-router"] = topic_router(driver, base_url, TRAFFIC_TOPIC)
    snap("topic-router")
    pages.close_dialog(driver)
    seen["topic-config"] = topic_config(driver, base_url, TYPED_TOPICS["FIFO"], "FIFO")
    snap("topic-config")
    pages.close_dialog(driver)
    naddr = site.target.namesrv_addr
    seen["topic-add-delete"] = create_and_delete_topic(driver, base_url, UI_TOPIC, naddr, site.home, snap)
    # split, broker id (master/slave), address, version, TPS and counts: the first two and version
    seen["cluster"] = [[row[0], row[1], row[3]] for row in table(driver, base_url, "cluster")]
    snap("cluster")
    # group, client count, version, consume type, model, TPS, lag, update time: all but TPS and time
    seen["consumer"] = sorted(row[:5] + row[6:7] for row in table(driver, base_url, "consumer", "dash"))
    snap("consumer")
    seen["consumer-client"] = pages.consumer_client(driver, base_url, LIVE_GROUP)
    snap("consumer-client")
    pages.close_dialog(driver)
    seen["consume-detail"] = pages.consume_detail(driver, base_url, LIVE_GROUP)
    snap("consume-detail")
    pages.close_dialog(driver)
    seen["producer"] = pages.producer_connections(driver, base_url, LIVE_TOPIC, PRODUCER_GROUP)
    snap("producer")
    seen.update(message_pages(driver, base_url, snap))
    [sent] = [event for event in site.sent["traffic"] if event["keys"] == KEY]
    for kind, msg_id in (("uniq", sent["msgId"]), ("offset", sent["offsetMsgId"])):
        seen[f"message-by-id-{kind}"] = search.message_by_id(driver, base_url, TRAFFIC_TOPIC, msg_id)
        snap(f"message-by-id-{kind}")
        pages.close_dialog(driver)
    seen["dlq"] = search.dlq_message_by_id(driver, base_url, DEAD_GROUP, site.sent["dead"]["msgId"])
    snap("dlq-message")
    seen["trace"] = search.message_trace(driver, base_url, TRAFFIC_TOPIC, KEY)
    snap("message-trace")
    search.close_trace(driver)
    seen.update(reset_offset(driver, base_url, snap))
    # last: the dashboard's first topic collection (second 30 of a minute) is likely done by now
    seen["home"] = search.home(driver, base_url)
    snap("home")
    return seen


def message_pages(driver: webdriver.Chrome, base_url: str, snap: Callable[[str], None]) -> dict[str, Any]:
    """The message page: the traffic topic's messages in a time range (tag and key of each), by
    key, and the detail dialog of the message found by key (its queue and the consumer groups'
    states left out: the producer's queue choice and the groups differ per run)."""
    seen: dict[str, Any] = {}
    driver.get(f"{base_url}/#/message")
    span = (stamp(STARTED - 60), stamp(time.time() + 3600))
    found = pages.search_tab(driver, "Topic", TRAFFIC_TOPIC, span=span)
    seen["message-by-topic"] = sorted(row[1:3] for row in found)
    snap("message-by-topic")
    found = pages.search_tab(driver, "Message Key", TRAFFIC_TOPIC, KEY)
    seen["message-by-key"] = [row[1:3] for row in found]
    snap("message-by-key")
    detail = pages.message_detail(driver, "Message Detail")
    snap("message-detail")
    pages.close_dialog(driver)
    items: list[list[str]] = detail["items"]
    until = next((i for i, item in enumerate(items) if item[0] == "Consumer group"), len(items))
    seen["message-detail"] = [item for item in items[:until] if item[0] != "Queue ID"]
    return seen


def reset_offset(driver: webdriver.Chrome, base_url: str, snap: Callable[[str], None]) -> dict[str, Any]:
    """The traffic group's offsets reset, from the traffic topic's row, to a time before any
    traffic: the result dialog and the group's CONSUME DETAIL afterwards."""
    seen: dict[str, Any] = {}
    topic_row(driver, base_url, TRAFFIC_TOPIC)
    seen["reset-result"] = pages.reset_offset(driver, TRAFFIC_TOPIC, GROUP, stamp(STARTED - 60))
    snap("reset-offset")
    pages.close_dialog(driver)
    seen["reset-detail"] = pages.consume_detail(driver, base_url, GROUP)
    snap("reset-consume-detail")
    pages.close_dialog(driver)
    return seen


def stamp(when: float) -> str:
    """``when`` as the dashboard's date pickers take it (the browser's zone is this machine's)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


@pytest.fixture(scope="module", params=[True, False], ids=["vip-on", "vip-off"])
def views(
    request: pytest.FixtureRequest,
    targets: dict[str, traffic.Site],
    drivers: dict[str, webdriver.Chrome],
    tmp_path_factory: pytest.TempPathFactory,
) -> Views:
    """What the dashboard shows for each target, VIP channel on (its default) or off. Both
    targets' dashboards boot together and are visited side by side, each in its own browser."""
    vip: bool = request.param
    boards: dict[str, dashboard.Dashboard] = {}

    def boot_and_visit(name: str) -> dict[str, Any]:
        board, site = boards[name], targets[name]
        with traffic.timed(f"{name} vip={vip}: dashboard boot"):
            board.wait_ready()
        try:
            with traffic.timed(f"{name} vip={vip}: visits"):
                return visit(drivers[name], board.base_url, name, vip, site)
        except BaseException:
            # the other VIP setting's visit lists topics: not this one's leftover
            delete_topic(site.target.namesrv_addr, UI_TOPIC, site.home)
            raise
        finally:
            board.stop()

    try:
        for name, site in targets.items():
            workdir = tmp_path_factory.mktemp(f"dashboard-{name}")
            boards[name] = dashboard.Dashboard(workdir, site.target.namesrv_addr, vip_channel=vip, wait=False)
        with ThreadPoolExecutor(len(boards)) as pool:
            visits = {name: pool.submit(boot_and_visit, name) for name in boards}
            return {name: done.result() for name, done in visits.items()}
    finally:
        for board in boards.values():
            board.stop()


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
    """The consumer groups (the one that consumed the traffic, the live one): clients, type,
    model and lag."""
    groups = [row[0] for row in views["reference"]["consumer"]]
    assert groups == sorted([GROUP, LIVE_GROUP, DEAD_GROUP]), views["reference"]
    assert views["gateway"]["consumer"] == views["reference"]["consumer"]


def test_topic_router_dialog(views: Views) -> None:
    """The traffic topic's route: one broker, 8 read and write queues, perm 6 (RW)."""
    assert ["broker-a", "8", "8", "6"] in views["reference"]["topic-router"]["rows"], views["reference"]
    assert views["gateway"]["topic-router"] == views["reference"]["topic-router"]


def test_topic_config_dialog(views: Views) -> None:
    """The FIFO topic's config: broker, name, message type from its attributes, queue numbers, perm."""
    assert ["messageType", "FIFO"] in views["reference"]["topic-config"], views["reference"]
    assert views["gateway"]["topic-config"] == views["reference"]["topic-config"]


def test_topic_added_and_deleted_from_the_ui(views: Views) -> None:
    """The Add/Update dialog's defaults; the topic it adds is listed with that config and routed
    (mqadmin topicRoute); deleted from its row it is gone from the list and the route."""
    seen = views["reference"]["topic-add-delete"]
    assert ["topicName", UI_TOPIC] in seen["created-config"], seen
    assert seen["after-delete"] == [], seen
    assert seen["deleted-route"] == "no route", seen
    assert views["gateway"]["topic-add-delete"] == seen


def test_consumer_client_dialog(views: Views) -> None:
    """The live consumer's connection: consume type, model, from-where, language and version, and
    its subscriptions (the topic and its retry topic)."""
    seen = views["reference"]["consumer-client"]
    assert ["Consume Type", "CONSUME_PASSIVELY"] in seen["items"], seen
    assert len(seen["rows"]) == 3, seen  # one connection, two subscriptions
    assert views["gateway"]["consumer-client"] == seen


def offsets(rows: list[list[str]]) -> tuple[list[list[str]], int, int]:
    """A CONSUME DETAIL table as its (broker, queue) pairs and the totals of the broker and
    consumer offsets (which queue a message went to is the producer's random start)."""
    return [row[:2] for row in rows], sum(int(row[2]) for row in rows), sum(int(row[3]) for row in rows)


def test_consume_detail_dialog(views: Views) -> None:
    """The live group's progress per queue: the one message sent, consumed."""
    assert offsets(views["reference"]["consume-detail"])[1:] == (1, 1), views["reference"]
    assert offsets(views["gateway"]["consume-detail"]) == offsets(views["reference"]["consume-detail"])


def test_reset_offset(views: Views) -> None:
    """The traffic group reset to a time before the traffic: the result dialog names it, and its
    CONSUME DETAIL then shows every consumer offset at 0 (all the traffic as lag)."""
    assert views["reference"]["reset-result"]["rows"][0][0] == GROUP, views["reference"]
    assert offsets(views["reference"]["reset-detail"])[1:] == (COUNT, 0), views["reference"]
    assert views["gateway"]["reset-result"] == views["reference"]["reset-result"]
    assert offsets(views["gateway"]["reset-detail"]) == offsets(views["reference"]["reset-detail"])


def test_producer_page(views: Views) -> None:
    """The live producer's connection for its topic and group: language and version."""
    assert len(views["reference"]["producer"]) == 1, views["reference"]
    assert views["gateway"]["producer"] == views["reference"]["producer"]


def test_message_pages(views: Views) -> None:
    """The traffic topic's messages in a time range (the first page: 10 of the 12, each with the
    tag its key was sent with; which 10 follows the producer's random first queue), by key, and
    one message's detail dialog (fields, properties, body)."""
    for name in ("reference", "gateway"):
        shown = views[name]["message-by-topic"]
        assert len(shown) == 10, (name, shown)
        for tag, key in shown:
            assert tag == ("TagA" if int(key.removeprefix("dk-")) % 2 == 0 else "TagB"), (name, shown)
    seen = views["reference"]
    assert seen["message-by-key"] == [["TagB", "dk-3"]], seen
    assert ["KEYS", "dk-3"] in seen["message-detail"], seen
    for page in ("message-by-key", "message-detail"):
        assert views["gateway"][page] == seen[page], page


def test_message_by_id(views: Views) -> None:
    """The Message ID tab: by the UNIQ_KEY id, the Message Detail dialog of the traffic message
    with key dk-3 (tag, keys, body); by the offset id the send returned, "Failed to query message
    by Id" (the dashboard looks ids up as unique keys only). The same on both brokers."""
    seen = views["reference"]
    assert ["KEYS", KEY] in seen["message-by-id-uniq"], seen
    assert seen["message-by-id-offset"] == [["Failed to query message by Id: MSGID"]], seen
    for page in ("message-by-id-uniq", "message-by-id-offset"):
        assert views["gateway"][page] == seen[page], page


def test_dlq_message_page(views: Views) -> None:
    """The DLQ message page's Message ID tab for the group whose listener gave up on its one
    message: one row for it, found in ``%DLQ%<group>`` (its cells are the dashboard's reading of
    the lookup's answer: no id, tag or key, the time of drawing, the operations)."""
    assert len(views["reference"]["dlq"]) == 1, views["reference"]
    assert views["gateway"]["dlq"] == views["reference"]["dlq"]


def test_message_trace_page(views: Views) -> None:
    """The message trace page for the traffic message with key dk-3: the trace topic chosen, the
    send trace (topic, producer group, key, tag, message type, retries) and the consume trace of
    the traffic group (successful, no retries)."""
    seen = views["reference"]["trace"]
    assert seen["trace-topic"] == "RMQ_SYS_TRACE_TOPIC", seen
    assert ["ProducerGroup", TRAFFIC_PRODUCER] in seen["send"], seen
    assert [group for group, _ in seen["consume"]] == [f"SubscriptionGroup: {GROUP}"], seen
    assert views["gateway"]["trace"] == seen


def test_home_dashboard_tab(views: Views) -> None:
    """The home Dashboard tab: the broker overview (broker names) and the topics the dashboard
    collected itself (``enableDashBoardCollect``) that its topic drop-down offers. Not compared:
    the charts' numbers, the topic the drop-down picks first (the one with most messages consumed
    today, a tie here broken by map order), and the topic added and deleted in the UI (listed
    when a collection ran while it existed)."""
    seen = {name: {**views[name]["home"]} for name in ("reference", "gateway")}
    for shown in seen.values():
        del shown["first"]
        shown["topics"] = [topic for topic in shown["topics"] if topic != UI_TOPIC]
    assert [row[0] for row in seen["reference"]["brokers"]] == ["broker-a"], seen
    assert {TRAFFIC_TOPIC, LIVE_TOPIC, *TYPED_TOPICS.values()} <= set(seen["reference"]["topics"]), seen
    assert seen["gateway"] == seen["reference"]
