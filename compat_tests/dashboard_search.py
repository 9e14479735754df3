"""The rocketmq-dashboard pages ``compat_tests/test_dashboard_compat.py`` reads beyond the topic,
consumer and producer pages: the message page's Message ID tab, the DLQ message page, the message
trace page and the home Dashboard tab (``frontend-new/src/pages/{Message,DlqMessage,MessageTrace,
Dashboard}``), with what depends on the run (addresses, ids, times, costs) masked.
"""

from __future__ import annotations

import time
from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from compat_tests import dashboard
from compat_tests import dashboard_pages as pages

#: How long the home page may wait for the dashboard's own topic collection: ``DashboardCollectTask
#: .collectTopic`` runs at second 30 of every minute, its results are saved every 5 s.
COLLECT_TIMEOUT_S = 150.0


def message_by_id(driver: webdriver.Chrome, base_url: str, topic: str, msg_id: str) -> list[list[str]]:
    """The message page's Message ID tab: ``topic`` chosen, ``msg_id`` typed, Search pressed: the
    ``label, value`` items of the Message Detail dialog it opens, up to the consumer groups'
    states and without the queue (the producer's queue choice differs per run). The dialog stays
    open."""
    driver.get(f"{base_url}/#/message")
    items = pages.search_tab(driver, "Message ID", topic, msg_id, results="dialog")
    until = next((i for i, item in enumerate(items) if item[0] == "Consumer group"), len(items))
    return [item for item in items[:until] if item[0] != "Queue ID"]


def dlq_message_by_id(driver: webdriver.Chrome, base_url: str, group: str, msg_id: str) -> list[list[str]]:
    """The DLQ message page's Message ID tab: ``group`` chosen, the dead message's id typed,
    Search pressed: the cells of the row found in ``%DLQ%<group>`` (masked).

    Its Consumer tab finds nothing on any broker: whatever its date pickers show (their defaults
    or a range typed in), the query it sends has begin and end both at midnight today
    (``queryDlqMessageByConsumerGroup.query``'s request body)."""
    driver.get(f"{base_url}/#/dlqMessage")
    # the message page before has a Message ID tab too: wait for the DLQ page's Consumer tab
    pages.poll("DLQ page", lambda: "Consumer" in _tab_labels(driver) or None)
    rows = pages.search_tab(driver, "Message ID", group, msg_id)
    return pages.masked(rows)


def _tab_labels(driver: webdriver.Chrome) -> list[str]:
    return [tab.text.strip() for tab in driver.find_elements(By.CSS_SELECTOR, "main .ant-tabs-tab")]


#: The message trace overlay (drawn in a fixed ``div``, not an antd modal): the producer's form
#: (``label, value``), and per subscription group its header and consume rows.
TRACE_SCRIPT = """
const text = e => e ? e.innerText.trim() : '';
const panels = Array.from(document.querySelectorAll('.ant-collapse-item'));
if (panels.length === 0) return null;
const form = Array.from(document.querySelectorAll('.ant-form-vertical .ant-form-item'), f =>
    [text(f.querySelector('.ant-form-item-label')), (f.querySelector('input') || {}).value || '']);
const groups = Array.from(document.querySelectorAll('.ant-collapse-ghost .ant-collapse-item'), g =>
    [text(g.querySelector('.ant-collapse-header')),
     Array.from(g.querySelectorAll('.ant-table-tbody tr.ant-table-row'), r =>
         Array.from(r.querySelectorAll(':scope > td'), td => td.innerText.trim()))]);
const headers = panels.map(p => text(p.querySelector('.ant-collapse-header')));
return {form: form, groups: groups, headers: headers,
        spinning: document.querySelector('.ant-spin-spinning') !== null};
"""

#: The send trace's fields compared, by position (several have no English label): topic,
#: producer group, key, tag, message type, retry times; not the begin and end times, the cost, the
#: client and store hosts, the offset message id.
SEND_FIELDS = (0, 1, 2, 3, 7, 10)

#: The trace topic drop-down's value (the page picks ``RMQ_SYS_TRACE_TOPIC`` when the broker has
#: it), once the trace page has replaced the page before.
TRACE_TOPIC_SCRIPT = """
for (const item of document.querySelectorAll('main .ant-form-item')) {
  const label = item.querySelector('.ant-form-item-label');
  if (label && label.innerText.trim().startsWith('TraceTopic')) {
    const chosen = item.querySelector('.ant-select-selection-item');
    return chosen ? chosen.innerText.trim() : null;
  }
}
return null;
"""


def message_trace(driver: webdriver.Chrome, base_url: str, topic: str, key: str) -> dict[str, Any]:
    """The message trace page's Message Key tab (trace topic as the page chose it): ``topic`` and
    ``key`` searched, then the first row's Message Trace Detail: the trace topic, the row found
    (tag, key), the send trace's fields (timing and hosts masked) and per subscription group its
    consume rows (status and retry times; begin/end times, cost and hosts left out). The overlay
    stays open (:func:`close_trace`)."""
    driver.get(f"{base_url}/#/messageTrace")
    trace_topic = pages.poll("trace topic chosen", lambda: driver.execute_script(TRACE_TOPIC_SCRIPT) or None)
    rows = pages.search_tab(driver, "Message Key", topic, key)
    seen: dict[str, Any] = {"trace-topic": trace_topic, "rows": [row[1:3] for row in rows]}
    _first_row_button(driver, "Message Trace Detail").click()
    shown = pages.settled(driver, TRACE_SCRIPT, "message trace detail")
    seen["send"] = [
        [label, value if i in SEND_FIELDS else "MASKED"] for i, (label, value) in enumerate(shown["form"])
    ]
    seen["headers"] = pages.masked(shown["headers"])
    seen["consume"] = [[header, [row[3:5] for row in rows]] for header, rows in shown["groups"]]
    return seen


def close_trace(driver: webdriver.Chrome) -> None:
    """Press the message trace overlay's Close button."""
    pages.button(driver, "Close").click()
    pages.poll("trace closed", lambda: None if driver.execute_script(TRACE_SCRIPT) else True)


def _first_row_button(driver: webdriver.Chrome, label: str) -> WebElement:
    """The button ``label`` of the active tab's first result row."""
    rows = "main .ant-tabs-tabpane-active .ant-table-tbody tr.ant-table-row"

    def probe() -> WebElement | None:
        first = driver.find_elements(By.CSS_SELECTOR, rows)
        for found in first[0].find_elements(By.CSS_SELECTOR, "button") if first else []:
            if pages.same_label(found.text, label):
                return found
        return None

    return pages.poll(f"{label} of the first row", probe)


#: The home page's card titled ``arguments[0]`` (null until the home page replaced the page
#: before): its drop-down, the value chosen there (null while the page has no collected topic)
#: and its table's cells.
CARD_SCRIPT = """
const card = Array.from(document.querySelectorAll('main .ant-card'))
    .find(c => (c.querySelector('.ant-card-head-title')?.innerText || '').trim() === arguments[0]);
if (!card) return null;
const chosen = card.querySelector('.ant-select-selection-item');
return {chosen: chosen ? chosen.innerText.trim() : null, select: card.querySelector('.ant-select-selector'),
        rows: Array.from(card.querySelectorAll('.ant-table-tbody tr.ant-table-row'), r =>
            Array.from(r.querySelectorAll('td'), td => td.innerText.trim()))};
"""


def home(driver: webdriver.Chrome, base_url: str) -> dict[str, Any]:
    """The home Dashboard tab: the Broker Overview table (broker name, address masked; the
    message counts left out), and once the dashboard has collected topic data (see
    :data:`COLLECT_TIMEOUT_S`) the topic its Topic 5min trend card picked first and the names
    that card's drop-down offers."""
    driver.get(f"{base_url}/#/")
    overview = pages.poll(
        "broker overview",
        lambda: (driver.execute_script(CARD_SCRIPT, "Broker Overview") or {}).get("rows") or None,
    )
    brokers = [row[:2] for row in pages.masked(overview)]
    card = "Topic 5min trend"

    def collected() -> dict[str, Any] | None:
        shown = driver.execute_script(CARD_SCRIPT, card)
        if shown and shown["chosen"]:
            return dict(shown)
        time.sleep(4)  # the page asks once: load it again
        driver.refresh()
        return None

    shown = dashboard.poll("collected topics", collected, COLLECT_TIMEOUT_S)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", shown["select"])
    shown["select"].click()
    options = ".ant-select-dropdown:not(.ant-select-dropdown-hidden) .ant-select-item-option"
    names = pages.poll("topic options", lambda: driver.execute_script(OPTIONS_SCRIPT, options) or None)
    return {"brokers": brokers, "first": shown["chosen"], "topics": sorted(names)}


#: The option titles of the open drop-down (antd sets ``title`` on every rendered option).
OPTIONS_SCRIPT = (
    "return Array.from(document.querySelectorAll(arguments[0]),"
    " o => o.getAttribute('title') || o.innerText.trim());"
)
