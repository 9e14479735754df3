"""Apache rocketmq-dashboard as a subprocess and headless Chromium driving its pages, for
``compat_tests/test_dashboard_compat.py``.

The dashboard jar is built by ``scripts/setup-dashboard.sh`` (newest release tag of the
rocketmq-dashboard git mirror) into ``~/.cache/rocketmq-gateway/dashboard/<commit>/``; ``current``
links to the last one built. Chromium and chromedriver are Debian's (the same script installs them).
The dashboard gets a free loopback port, its data directory and ``user.home`` in a temporary
directory, and one NameServer address (``rocketmq.config.namesrvAddrs``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from compat_tests.reference import stop
from compat_tests.scenario import TEST_JVM_OPTIONS
from gateway.testing.ports import free_port

#: Screenshots and ``timings.txt`` of the dashboard suite.
ARTIFACTS = (
    Path(os.environ.get("CI_ARTIFACTS", Path(__file__).resolve().parent.parent / "build" / "artifacts"))
    / "dashboard"
)
CACHE = Path(os.environ.get("DASHBOARD_CACHE", Path.home() / ".cache" / "rocketmq-gateway" / "dashboard"))
JAR = CACHE / "current" / "rocketmq-dashboard.jar"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
BOOT_TIMEOUT_S = 150.0  # a Spring Boot start on a loaded 2-core machine
PAGE_TIMEOUT_S = 60.0

T = TypeVar("T")


def missing() -> str | None:
    """Why the dashboard suite cannot run here, or None."""
    if not JAR.is_file():
        return f"{JAR} missing: run scripts/setup-dashboard.sh"
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        return "chromium or chromedriver missing: run scripts/setup-dashboard.sh"
    if shutil.which("java") is None:
        return "java missing"
    return None


def poll(what: str, probe: Callable[[], T | None], timeout: float = PAGE_TIMEOUT_S) -> T:
    """``probe()`` until it answers something other than None; TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(0.25)


class Dashboard:
    """One rocketmq-dashboard process serving ``base_url``; ``vip_channel`` is its
    ``rocketmq.config.isVIPChannel`` (the dashboard's own default is on). It collects its own
    topic and broker data for the home page (``enableDashBoardCollect``, its default too). With
    ``wait=False`` the constructor returns at once and :meth:`wait_ready` waits for the boot."""

    def __init__(self, workdir: Path, namesrv_addr: str, *, vip_channel: bool, wait: bool = True) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log = workdir / "dashboard.log"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xms128m",
                    "-Xmx384m",
                    *TEST_JVM_OPTIONS,
                    f"-Duser.home={workdir}",
                    "-jar",
                    str(JAR),
                    f"--server.port={self.port}",
                    "--server.address=127.0.0.1",
                    f"--rocketmq.config.namesrvAddrs[0]={namesrv_addr}",
                    f"--rocketmq.config.isVIPChannel={str(vip_channel).lower()}",
                    f"--rocketmq.config.dataPath={workdir / 'data'}",
                    "--rocketmq.config.enableDashBoardCollect=true",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                env={**os.environ, "HOME": str(workdir)},
            )
        self.started = time.monotonic()
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Until the dashboard answers (at most :data:`BOOT_TIMEOUT_S` after its start)."""
        left = BOOT_TIMEOUT_S - (time.monotonic() - self.started)
        try:
            poll("dashboard answering", self._answers, max(left, 1.0))
        except BaseException:
            self.stop()
            raise

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool | None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"dashboard exited ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(self.base_url + "/", timeout=5) as response:
                return True if response.status == 200 else None
        except (urllib.error.URLError, OSError):
            return None

    def stop(self) -> None:
        stop(self.proc)


def browser(downloads: Path) -> webdriver.Chrome:
    """Headless Chromium with a fixed window size (the screenshots compare by eye)."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1600,1000",
        f"--user-data-dir={downloads / 'chromium'}",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(PAGE_TIMEOUT_S)
    return driver


def texts(elements: list[WebElement]) -> list[str]:
    return [element.text.strip() for element in elements]


def settled_rows(driver: webdriver.Chrome, selector: str, timeout: float = PAGE_TIMEOUT_S) -> list[str]:
    """The texts of the rows matching ``selector`` once two reads 1 s apart agree and no spinner
    shows (the pages load their tables asynchronously)."""
    last: list[list[str]] = []

    def probe() -> list[str] | None:
        if driver.find_elements(By.CSS_SELECTOR, ".ant-spin-spinning"):
            return None
        script = "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText.trim());"
        now: list[str] = driver.execute_script(script, selector)
        if last and last[-1] == now:
            return now
        last.append(now)
        time.sleep(0.75)
        return None

    return poll(f"rows {selector}", probe, timeout)
