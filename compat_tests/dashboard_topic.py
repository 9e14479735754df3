"""The rocketmq-dashboard topic page for ``compat_tests/test_dashboard_compat.py``: its type
filters, a topic's Status, Router and Topic Config dialogs, and a topic added in its Add/Update
dialog and deleted from its row (``frontend-new/src/pages/Topic/topic.jsx``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By

from compat_tests import dashboard
from compat_tests import dashboard_pages as pages
from compat_tests.reference import run_mqadmin

#: The type check boxes of the topic page, in the order it draws them (``pages/Topic/topic.jsx``).
TYPE_BOXES = ("NORMAL", "DELAY", "FIFO", "TRANSACTION", "UNSPECIFIED", "RETRY", "DLQ", "SYSTEM")


def tick_only(driver: webdriver.Chrome, kind: str) -> None:
    """Tick the topic page's type box ``kind`` and untick the others."""
    boxes = driver.find_elements(By.CSS_SELECTOR, "form .ant-checkbox-wrapper")
    assert len(boxes) == len(TYPE_BOXES), dashboard.texts(boxes)
    for name, box in zip(TYPE_BOXES, boxes, strict=True):
        if box.find_element(By.CSS_SELECTOR, "input").is_selected() != (name == kind):
            box.click()


def open_topic_page(driver: webdriver.Chrome, base_url: str, filter_text: str) -> None:
    driver.get(base_url + "/#/topic")

    def typed() -> bool | None:
        # the page before (a hash route) may still show: wait for the type boxes, and retype
        # when the filter box is replaced meanwhile
        if len(driver.find_elements(By.CSS_SELECTOR, "form .ant-checkbox-wrapper")) != len(TYPE_BOXES):
            return None
        box = driver.find_elements(By.CSS_SELECTOR, "form input.ant-input")
        if not box:
            return None
        pages.clear_and_type(box[0], filter_text)
        return True

    pages.poll("topic filter", typed)


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


def topic_status(driver: webdriver.Chrome, base_url: str, topic: str) -> list[list[str]]:
    """The Status dialog of ``topic`` (no message.type) (queue, min and max offset; not the
    update time)."""
    open_topic_page(driver, base_url, topic)
    tick_only(driver, "UNSPECIFIED")
    rows = dashboard.settled_rows(driver, ".ant-table-tbody tr.ant-table-row td:first-child")
    assert rows == [topic], rows
    driver.find_element(By.CSS_SELECTOR, ".ant-table-tbody tr.ant-table-row button").click()
    selector = ".ant-modal .ant-table-tbody tr.ant-table-row"
    dashboard.poll("status dialog", lambda: driver.find_elements(By.CSS_SELECTOR, selector) or None)
    dashboard.settled_rows(driver, selector)
    cells = cells_of(driver, selector)
    return sorted(row[:3] for row in cells)


def topic_row(driver: webdriver.Chrome, base_url: str, topic: str, kind: str = "UNSPECIFIED") -> None:
    """The topic page showing ``topic`` alone (ticked under ``kind``)."""
    open_topic_page(driver, base_url, topic)
    tick_only(driver, kind)
    rows = dashboard.settled_rows(driver, f"{pages.PAGE_ROWS} td:first-child")
    assert rows == [topic], rows


def topic_router(driver: webdriver.Chrome, base_url: str, topic: str) -> dict[str, Any]:
    """The Router dialog of ``topic`` (no message.type): broker names and the queue table (read
    and write queue numbers, perm); the addresses masked."""
    topic_row(driver, base_url, topic)
    pages.row_button(driver, topic, "Router").click()
    shown = pages.dialog(driver, "router dialog")
    return pages.masked({"title": shown["title"], "rows": shown["rows"]})


def topic_config(driver: webdriver.Chrome, base_url: str, topic: str, kind: str) -> list[list[str]]:
    """The Topic Config dialog of ``topic``: its form fields (broker, name, message type, queue
    numbers, perm) as labels and values."""
    topic_row(driver, base_url, topic, kind)
    pages.row_button(driver, topic, "Topic Config").click()
    shown = pages.dialog(driver, "topic config dialog", ready="inputs")
    fields: list[list[str]] = shown["inputs"]
    return [field for field in fields if field[0]]


def create_and_delete_topic(
    driver: webdriver.Chrome, base_url: str, topic: str, naddr: str, home: Path, snap: Callable[[str], None]
) -> dict[str, Any]:
    """Add a topic in the Add/Update dialog (name typed, the rest as the dialog offers: every
    cluster, 8 queues, perm 7), see it listed and in the broker's route, delete it from its row."""
    seen: dict[str, Any] = {}
    open_topic_page(driver, base_url, "")
    pages.button(driver, "Add / Update").click()
    form = pages.dialog(driver, "add topic dialog", ready="inputs")
    seen["add-form"] = [field for field in form["inputs"] if field[0]]
    name_box = driver.find_element(By.CSS_SELECTOR, ".ant-modal-wrap input#topicName")
    pages.clear_and_type(name_box, topic)
    snap("topic-add")
    pages.button(driver, "Commit").click()
    pages.dialog_closed(driver, "add topic dialog closed on success")
    topic_row(driver, base_url, topic, "NORMAL")
    snap("topic-added")
    seen["created-config"] = topic_config(driver, base_url, topic, "NORMAL")
    pages.close_dialog(driver)
    seen["created-route"] = route_queues(naddr, topic, home)
    topic_row(driver, base_url, topic, "NORMAL")
    pages.row_button(driver, topic, "Delete").click()
    pages.button(driver, "Yes").click()
    open_topic_page(driver, base_url, topic)
    tick_only(driver, "NORMAL")
    seen["after-delete"] = dashboard.settled_rows(driver, f"{pages.PAGE_ROWS} td:first-child")
    snap("topic-deleted")
    seen["deleted-route"] = route_queues(naddr, topic, home)
    return seen


def route_queues(naddr: str, topic: str, home: Path) -> str:
    """What ``mqadmin topicRoute`` says of ``topic``: its queue data, or "no route"."""
    out = run_mqadmin(naddr, "topicRoute", "-t", topic, home=home)
    return "no route" if "queueDatas" not in out else re.sub(r"\s+", "", out.split("queueDatas")[1])


def delete_topic(naddr: str, topic: str, home: Path) -> None:
    """``mqadmin deleteTopic`` of ``topic`` from the test clusters (named DefaultCluster), for a
    visit that stopped between adding and deleting it."""
    run_mqadmin(naddr, "deleteTopic", "-t", topic, "-c", "DefaultCluster", home=home)
