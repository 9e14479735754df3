"""The rocketmq-dashboard pages and dialogs ``compat_tests/test_dashboard_compat.py`` compares
beyond its topic list, cluster and consumer tables: what each shows, read in the browser, with
what depends on the run (addresses, client ids, times, message ids) masked.

Page structure is the dashboard's ``frontend-new/src`` (antd components): dialogs are
``.ant-modal``, tables ``.ant-table``, drop-downs ``.ant-select``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import (
    ElementClickInterceptedException,
    ElementNotInteractableException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from compat_tests import dashboard

T = TypeVar("T")

#: The rows of the page's own tables (dialogs are drawn outside ``main``, and a closed one stays).
PAGE_ROWS = "main .ant-table-tbody tr.ant-table-row"

#: What differs from run to run or between the two brokers' hosts, masked in every text read.
MASKS = (
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:@\S+)?"), "ADDR"),  # addresses, client ids
    (re.compile(r"\b[0-9A-F]{32,}\b"), "MSGID"),  # UNIQ_KEY / offset message ids
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?"), "TIME"),
    (re.compile(r"\b1\d{12}\b"), "MILLIS"),
)

#: The open dialog: its title, ``label: value`` items (antd Descriptions) and the cell texts of
#: every table row in it, in one script run (a dialog that re-renders leaves nothing stale).
MODAL_SCRIPT = """
const wraps = Array.from(document.querySelectorAll('.ant-modal-wrap'))
    .filter(w => getComputedStyle(w).display !== 'none' && w.getClientRects().length > 0);
const modal = wraps.length ? wraps[wraps.length - 1].querySelector('.ant-modal') : null;
if (!modal) return null;
const text = e => e ? e.innerText.trim() : '';
return {
  title: text(modal.querySelector('.ant-modal-title')),
  items: Array.from(modal.querySelectorAll('.ant-descriptions-item-label'), l =>
      [text(l), text(l.nextElementSibling)]),
  rows: Array.from(modal.querySelectorAll('.ant-table-tbody tr.ant-table-row'), r =>
      Array.from(r.querySelectorAll(':scope > td'), td => td.innerText.trim())),
  inputs: Array.from(modal.querySelectorAll('.ant-form-item'), f =>
      [text(f.querySelector('.ant-form-item-label')),
       Array.from(f.querySelectorAll('input, .ant-select-selection-item'),
                  i => (i.value !== undefined && i.tagName === 'INPUT') ? i.value : text(i))
         .filter(v => v !== '').join(',')]),
  text: text(modal.querySelector('.ant-modal-body')),
  spinning: modal.querySelector('.ant-spin-spinning') !== null,
};
"""


def poll(what: str, probe: Callable[[], T | None]) -> T:
    """:func:`dashboard.poll` where an element the page replaced meanwhile means "not yet"."""

    def fresh() -> T | None:
        try:
            return probe()
        except StaleElementReferenceException:
            return None

    return dashboard.poll(what, fresh)


def mask(text: str) -> str:
    for pattern, name in MASKS:
        text = pattern.sub(name, text)
    return text


def masked(value: Any) -> Any:
    """``value`` (texts, nested in lists and dicts) with :data:`MASKS` applied."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        return [masked(v) for v in value]
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    return value


def dialog(driver: webdriver.Chrome, what: str, ready: str = "rows") -> dict[str, Any]:
    """The open dialog (see :data:`MODAL_SCRIPT`) once it shows ``ready`` content and two reads
    agree."""
    return settled(driver, MODAL_SCRIPT, what, ready)


def settled(driver: webdriver.Chrome, script: str, what: str, ready: str | None = None) -> dict[str, Any]:
    """What ``script`` reads from the page (a dict with a ``spinning`` flag) once nothing spins,
    ``ready`` (when given) is non-empty and two reads 0.75 s apart agree."""
    last: list[Any] = []

    def probe() -> dict[str, Any] | None:
        now = driver.execute_script(script)
        if not now or now["spinning"] or (ready is not None and not now[ready]):
            return None
        if last and last[-1] == now:
            return dict(now)
        last.append(now)
        time.sleep(0.75)
        return None

    return poll(what, probe)


def close_dialog(driver: webdriver.Chrome) -> None:
    """Press the open dialog's close (x) button until no dialog shows. A dialog still fading in
    or out lets the page behind take the click; the next poll presses again."""

    def probe() -> bool | None:
        if not driver.execute_script(MODAL_SCRIPT):
            return True
        for button in driver.find_elements(By.CSS_SELECTOR, ".ant-modal-wrap .ant-modal-close"):
            if button.is_displayed():
                with contextlib.suppress(ElementClickInterceptedException, ElementNotInteractableException):
                    button.click()
                break
        return None

    poll("dialog closed", probe)


def dialog_closed(driver: webdriver.Chrome, what: str) -> None:
    """Wait until the dialog closes by itself (as the dashboard's dialogs do on a successful
    commit); one that stays open, showing an error, times out naming ``what``."""
    poll(what, lambda: None if driver.execute_script(MODAL_SCRIPT) else True)


def same_label(shown: str, label: str) -> bool:
    """Button texts compare without case (some are drawn upper-case) and spaces (antd spaces
    two-letter labels)."""
    return shown.replace(" ", "").strip().lower() == label.replace(" ", "").lower()


def button(scope: WebElement | webdriver.Chrome, label: str) -> WebElement:
    """The displayed button whose text is ``label`` (antd spaces two-letter CJK labels only)."""

    def probe() -> WebElement | None:
        for found in scope.find_elements(By.CSS_SELECTOR, "button"):
            if found.is_displayed() and same_label(found.text, label):
                return found
        return None

    return poll(f"button {label}", probe)


def row_button(driver: webdriver.Chrome, first_cell: str, label: str) -> WebElement:
    """The button ``label`` of the table row whose first cell is ``first_cell``."""

    def probe() -> WebElement | None:
        for row in driver.find_elements(By.CSS_SELECTOR, PAGE_ROWS):
            cells = row.find_elements(By.CSS_SELECTOR, "td")
            if cells and cells[0].text.strip() == first_cell:
                for found in row.find_elements(By.CSS_SELECTOR, "button"):
                    if same_label(found.text, label):
                        return found
        return None

    return poll(f"{label} of {first_cell}", probe)


def choose(driver: webdriver.Chrome, select: WebElement, option: str) -> None:
    """Pick ``option`` in an antd drop-down: open it, type the option (it filters searchable
    lists, whose long option lists are virtual) and click the option."""
    select.click()
    ActionChains(driver).send_keys(option).perform()
    selector = ".ant-select-dropdown:not(.ant-select-dropdown-hidden) .ant-select-item-option"

    def probe() -> WebElement | None:
        for found in driver.find_elements(By.CSS_SELECTOR, selector):
            if found.is_displayed() and found.text.strip() == option:
                return found
        return None

    poll(f"option {option}", probe).click()


def clear_and_type(field: WebElement, text: str) -> None:
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)


def type_checked(driver: webdriver.Chrome, field: WebElement, text: str) -> None:
    """:func:`clear_and_type`; when the box does not then hold ``text``, its value set the way
    React reads a typed one (the native setter, then an ``input`` event). ChromeDriver's typing
    drops the "E" of "FE" in some message ids here, and an id missing a digit finds nothing."""
    clear_and_type(field, text)
    if field.get_attribute("value") != text:
        driver.execute_script(SET_VALUE_SCRIPT, field, text)
    poll(f"{text!r} in its box", lambda: True if field.get_attribute("value") == text else None)


SET_VALUE_SCRIPT = """
const [box, text] = arguments;
Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(box, text);
box.dispatchEvent(new Event('input', {bubbles: true}));
"""


def open_consumer_page(driver: webdriver.Chrome, base_url: str, group: str) -> None:
    """The consumer page with its search box holding ``group`` and that group's row shown."""
    driver.get(f"{base_url}/#/consumer")
    box = page_input(driver, "SubscriptionGroup:")
    clear_and_type(box, group)
    row_button(driver, group, "CLIENT")


def page_input(driver: webdriver.Chrome, label: str) -> WebElement:
    """The first text box of the page once the page showing the label ``label`` has replaced
    the one before (a hash route change re-renders ``main`` asynchronously)."""

    def probe() -> WebElement | None:
        labels = driver.find_elements(By.CSS_SELECTOR, "main label")
        if not any(found.text.strip() == label for found in labels):
            return None
        boxes = driver.find_elements(By.CSS_SELECTOR, "main input.ant-input")
        return boxes[0] if boxes else None

    return poll(f"text box next to {label}", probe)


def consumer_client(driver: webdriver.Chrome, base_url: str, group: str) -> dict[str, Any]:
    """The CLIENT dialog of ``group``: consume type, message model, consume-from-where, then its
    connections (client id and address masked, language, version) and subscriptions."""
    open_consumer_page(driver, base_url, group)
    row_button(driver, group, "CLIENT").click()
    shown = dialog(driver, "client dialog", ready="items")
    return masked({"items": shown["items"], "rows": shown["rows"]})


def consume_detail(driver: webdriver.Chrome, base_url: str, group: str) -> list[list[str]]:
    """The CONSUME DETAIL dialog of ``group``: per queue its broker, queue id, broker offset,
    consumer offset and lag (the client and last-consume time columns left out)."""
    open_consumer_page(driver, base_url, group)
    row_button(driver, group, "CONSUME DETAIL").click()
    shown = dialog(driver, "consume detail dialog")
    return sorted(row[:5] for row in shown["rows"])


def reset_offset(driver: webdriver.Chrome, topic: str, group: str, when: str) -> dict[str, Any]:
    """From ``topic``'s row on the topic page (shown by the caller): its Reset Consumer Offset
    dialog, ``group`` chosen, the time ``when`` (``YYYY-MM-DD HH:mm:ss``, the browser's zone)
    typed, RESET pressed: the result dialog (group, state) shown."""
    row_button(driver, topic, "Reset Consumer Offset").click()
    form = dialog(driver, "reset offset dialog", ready="inputs")
    assert form["title"].startswith(topic), form
    wrap = _open_wrap(driver)
    choose(driver, wrap.find_element(By.CSS_SELECTOR, ".ant-select-selector"), group)
    wrap.find_element(By.CSS_SELECTOR, ".ant-modal-title").click()  # closes the multi-select list
    picker = wrap.find_element(By.CSS_SELECTOR, ".ant-picker input")
    picker.click()
    clear_and_type(picker, when)
    picker.send_keys(Keys.ENTER)
    button(wrap, "RESET").click()
    shown = dialog(driver, "reset result dialog", ready="rows")
    return masked({"title": shown["title"], "rows": shown["rows"]})


def _open_wrap(driver: webdriver.Chrome) -> WebElement:
    """The open dialog's element (the last displayed ``.ant-modal-wrap``)."""
    shown = [w for w in driver.find_elements(By.CSS_SELECTOR, ".ant-modal-wrap") if w.is_displayed()]
    assert shown, "no dialog open"
    return shown[-1]


def search_tab(
    driver: webdriver.Chrome,
    tab: str | None,
    choice: str,
    text: str | None = None,
    span: tuple[str, str] | None = None,
    results: str = "rows",
) -> list[list[str]]:
    """On a page of search tabs (message, DLQ message, message trace): the tab ``tab`` (None:
    the page's form without tabs), ``choice`` picked in its drop-down, ``text`` typed in its text
    box, the begin and end times ``span`` typed in its date pickers (their defaults show a
    zero-length range), Search pressed: the cells of the rows found, or with ``results="dialog"``
    the ``label, value`` items of the dialog it opens (its text when it shows no items)."""
    scope = "main .ant-tabs-tabpane-active" if tab else "main"
    if tab:
        poll(f"tab {tab}", lambda: _tab(driver, tab)).click()
    pane = poll(f"{tab} pane", lambda: _displayed(driver, scope))
    choose(driver, pane.find_element(By.CSS_SELECTOR, ".ant-select-selector"), choice)
    if text is not None:
        type_checked(driver, pane.find_element(By.CSS_SELECTOR, "input.ant-input"), text)
    if span is not None:
        pickers = pane.find_elements(By.CSS_SELECTOR, ".ant-picker input")
        for picker, when in zip(pickers, span, strict=True):
            picker.click()
            clear_and_type(picker, when)
            picker.send_keys(Keys.ENTER)
    button(pane, "Search").click()
    if results == "dialog":
        shown = dialog(driver, f"{tab} dialog", ready="text")
        return [[item[0], mask(item[1])] for item in shown["items"]] or [[mask(shown["text"])]]
    rows = f"{scope} .ant-table-tbody tr.ant-table-row"
    poll(f"{tab} results", lambda: driver.find_elements(By.CSS_SELECTOR, rows) or None)
    dashboard.settled_rows(driver, rows)
    found: list[list[str]] = driver.execute_script(CELLS_SCRIPT, rows)
    return found


CELLS_SCRIPT = (
    "return Array.from(document.querySelectorAll(arguments[0]), row =>"
    " Array.from(row.querySelectorAll('td'), td => td.innerText.trim()));"
)


def _tab(driver: webdriver.Chrome, label: str) -> WebElement | None:
    for found in driver.find_elements(By.CSS_SELECTOR, "main .ant-tabs-tab"):
        if found.is_displayed() and found.text.strip() == label:
            return found
    return None


def _displayed(driver: webdriver.Chrome, selector: str) -> WebElement | None:
    shown = [e for e in driver.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]
    return shown[0] if shown else None


def producer_connections(driver: webdriver.Chrome, base_url: str, topic: str, group: str) -> list[list[str]]:
    """The producer page's connections of ``group`` on ``topic`` (client id and address masked,
    language, version)."""
    driver.get(f"{base_url}/#/producer")
    form = poll("producer form", lambda: _displayed(driver, "main form"))
    choose(driver, form.find_element(By.CSS_SELECTOR, ".ant-select-selector"), topic)
    clear_and_type(form.find_element(By.CSS_SELECTOR, "input.ant-input"), group)
    button(form, "SEARCH").click()
    rows = f"{PAGE_ROWS}"
    poll("producer connections", lambda: driver.find_elements(By.CSS_SELECTOR, rows) or None)
    dashboard.settled_rows(driver, rows)
    found: list[list[str]] = masked(driver.execute_script(CELLS_SCRIPT, rows))
    return found


def message_detail(driver: webdriver.Chrome, label: str) -> dict[str, Any]:
    """The dialog the button ``label`` of the active tab's first result row opens: the message's
    fields and properties (what depends on the run masked)."""
    rows = "main .ant-tabs-tabpane-active .ant-table-tbody tr.ant-table-row"
    first = poll("first result", lambda: _displayed(driver, rows))
    for found in first.find_elements(By.CSS_SELECTOR, "button"):
        if same_label(found.text, label):
            found.click()
            shown = dialog(driver, f"{label} dialog", ready="items")
            return masked({"items": shown["items"], "rows": shown["rows"]})
    raise AssertionError(f"no {label} button in {first.text}")
