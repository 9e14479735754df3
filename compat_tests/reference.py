"""The reference Apache RocketMQ 5.3.3 (Maven Central jars), the Java clients, and our own CLI,
started as subprocesses on loopback for compatibility tests.

Every process is started with a temporary ``user.home`` (RocketMQ writes logs and config there),
small heaps and free ports, and stopped with SIGTERM then SIGKILL.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio

from codec.bodies.route import TopicRouteData
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from gateway.client import connect

JAVA_DIR = Path(__file__).resolve().parent / "java"
REFERENCE_LIB = JAVA_DIR / "reference" / "target" / "lib"
CLIENT_LINES = ("4.9.8", "5.3.3")


def free_port(spare_below: int = 0, spare_above: int = 0) -> int:
    """A free loopback port whose neighbours (the broker's fast and HA ports) are free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        try:
            for p in range(port - spare_below, port + spare_above + 1):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


def topic_route(namesrv_addr: str, topic: str = "TBW102") -> TopicRouteData | None:
    """The route a NameServer gives for ``topic`` (asked directly: milliseconds, unlike an
    ``mqadmin`` JVM); ``None`` when it is unreachable or knows no route."""

    async def ask() -> TopicRouteData | None:
        try:
            async with connect(namesrv_addr) as conn:
                request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                response = await conn.invoke(request, 5)
        except (OSError, RocketMQError):
            return None
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None
        return TopicRouteData.decode(response.body)

    return trio.run(ask)


def wait_routed(
    namesrv_addr: str, broker_addr: str, timeout: float, broker: subprocess.Popen[Any] | None = None
) -> None:
    """Wait until the NameServer routes TBW102 to ``broker_addr``: the broker has registered there.

    A real broker logs "boot success" before its first registration, and registers only to the
    NameServers its client's scan thread already found reachable, so one of several may see it
    only at the next periodic registration. Fails early if ``broker`` exits.
    """
    deadline = time.monotonic() + timeout
    while True:
        route = topic_route(namesrv_addr)
        if route and any(broker_addr in b.broker_addrs.values() for b in route.broker_datas):
            return
        if broker is not None and broker.poll() is not None:
            raise RuntimeError(f"broker exited ({broker.returncode}) before registering at {namesrv_addr}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"broker {broker_addr} not routed by {namesrv_addr} within {timeout} s")
        time.sleep(0.2)


def stop(proc: subprocess.Popen[str], timeout: float = 15) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_line(path: Path, pattern: str, proc: subprocess.Popen[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        match = re.search(pattern, text)
        if match:
            return match.group(0)
        if proc.poll() is not None:
            raise RuntimeError(f"process exited ({proc.returncode}) before {pattern!r}:\n{text[-3000:]}")
        time.sleep(0.1)
    raise TimeoutError(f"{pattern!r} not seen within {timeout} s in {path}")


def start_gateway_namesrv(
    workdir: Path, conf: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Our NameServer through the real CLI (``conf``: namesrv.conf keys); returns it and its address."""
    log = workdir / "gateway-namesrv.log"
    args = [sys.executable, "-m", "gateway.cli", "namesrv", "--namesrv-port", "0"]
    if conf:
        conf_file = workdir / "gateway-namesrv.conf"
        conf_file.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        args += ["-c", str(conf_file)]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        env={**os.environ, "HOME": str(workdir)},
        text=True,
    )
    line = _wait_for_line(log, r"ready: namesrv=\S+", proc, 20)
    return proc, line.split("=", 1)[1]


def _start_java(
    workdir: Path, main: str, conf: Path, out_name: str, heap_mb: int
) -> tuple[subprocess.Popen[str], Path]:
    """Start a reference server's main class with ``-c conf``; output goes to ``workdir/out_name``."""
    out = workdir / out_name
    proc = subprocess.Popen(
        [
            "java",
            f"-Xms{heap_mb}m",
            f"-Xmx{heap_mb}m",
            f"-XX:MaxDirectMemorySize={heap_mb}m",
            f"-Duser.home={workdir}",
            f"-Drocketmq.home.dir={workdir}",
            "-cp",
            f"{REFERENCE_LIB}/*",
            main,
            "-c",
            str(conf),
        ],
        stdout=out.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, out


def start_reference_namesrv(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """The real Apache RocketMQ NameServer on a free loopback port; returns it and its address."""
    port = free_port()
    conf = workdir / "namesrv.conf"
    conf.write_text(f"listenPort={port}\nbindAddress=127.0.0.1\n")
    proc, out = _start_java(workdir, "org.apache.rocketmq.namesrv.NamesrvStartup", conf, "namesrv.out", 128)
    _wait_for_line(out, r"boot success", proc, 60)
    return proc, f"127.0.0.1:{port}"


def start_reference_broker(
    workdir: Path, namesrv_addr: str, broker_name: str = "broker-ref", extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The real Apache RocketMQ broker registering to ``namesrv_addr`` (``;``-separated list);
    returns it and its address. ``extra``: more broker.conf keys."""
    port = free_port(spare_below=2, spare_above=1)
    store = workdir / "store"
    conf = workdir / "broker.conf"
    conf.write_text(
        "\n".join(
            [
                "brokerClusterName=DefaultCluster",
                f"brokerName={broker_name}",
                "brokerId=0",
                f"listenPort={port}",
                f"haListenPort={port + 1}",
                f"namesrvAddr={namesrv_addr}",
                "brokerIP1=127.0.0.1",
                "brokerIP2=127.0.0.1",
                f"storePathRootDir={store}",
                f"storePathCommitLog={store / 'commitlog'}",
                "mappedFileSizeCommitLog=67108864",
                "autoCreateTopicEnable=true",
                *(f"{k}={v}" for k, v in (extra or {}).items()),
                "",
            ]
        )
    )
    proc, out = _start_java(workdir, "org.apache.rocketmq.broker.BrokerStartup", conf, "broker.out", 256)
    _wait_for_line(out, r"boot success", proc, 60)
    return proc, f"127.0.0.1:{port}"


def run_mqadmin(namesrv_addr: str, *args: str, home: Path, timeout: float = 60) -> str:
    """Run ``mqadmin`` (rocketmq-tools 5.3.3) and return its output without log noise."""
    result = subprocess.run(
        [
            "java",
            "-Xmx128m",
            f"-Duser.home={home}",
            "-cp",
            f"{REFERENCE_LIB}/*",
            "org.apache.rocketmq.tools.command.MQAdminStartup",
            *args,
            "-n",
            namesrv_addr,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = (result.stdout + result.stderr).splitlines()
    return "\n".join(
        line
        for line in lines
        if line.strip() and "logback" not in line and " INFO " not in line and " |-" not in line
    )


def run_capture(line: str, namesrv_addr: str, topic: str, home: Path, serialize: str = "JSON") -> str:
    """The capture scenario (consumer + producer, single and batch send) with one client line."""
    classes = JAVA_DIR / "target" / f"classes-{line}"
    lib = JAVA_DIR / "target" / f"lib-{line}"
    result = subprocess.run(
        [
            "java",
            f"-Drocketmq.serialize.type={serialize}",
            f"-Duser.home={home}",
            "-cp",
            f"{classes}{os.pathsep}{lib}/*",
            "rmqcompat.Capture",
            namesrv_addr,
            topic,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.stdout
