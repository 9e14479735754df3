"""Record golden vectors from the real Apache RocketMQ 5.3.3 NameServer and Broker and the real Java
clients (4.9.8 and 5.3.3) in both serialize types, through recording proxies.

``.venv/bin/python -m compat_tests.record_golden --out tests/golden`` (after ``scripts/setup-java.sh``;
see tests/golden/README.md for what is written). For each layout below it starts a NameServer and a
Broker (servers configured with the layout's serialize type, since a Java server answers in its own
type), a :class:`RecordingProxy` in front of the NameServer (clients and the broker's registration
both go through it) and one in front of the broker: the broker binds ``broker_bind`` while it
registers ``brokerIP1 = broker_ip1``, so clients dial the proxy listening on ``broker_ip1`` at the
broker's port (and at port - 2, the VIP channel). Then it runs the scenarios of each client line,
stops the broker, reads its commit log, and writes frames/ and records/.

Layouts ``ipv6-born`` (broker bound to ``::1``, the proxy dials it over IPv6) and ``ipv6-store``
(``brokerIP1 = ::1``) only exist for their stored records and IPv6 message ids.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat_tests import golden_scenarios as scen
from compat_tests.golden_writer import (
    Seen,
    commit_log_records,
    decode_all,
    pulled_records,
    select,
    summarize,
    write_frames,
    write_record,
)
from compat_tests.proxy import Connection, Frame, RecordingProxy, loopback_ipv6_available, running_proxies
from compat_tests.reference import ReferenceServers, free_port

log = logging.getLogger("record_golden")

LINES = ("4.9.8", "5.3.3")
REGISTER_WAIT_S = 30.0  # first REGISTER_BROKER answered by the NameServer
SETTLE_S = 1.0  # let oneway frames (offset commits, unregister) reach the proxies


@dataclass(frozen=True)
class Layout:
    name: str
    serialize: str  # of the servers and the clients
    broker_bind: str
    broker_ip1: str
    lines: tuple[str, ...]
    full: bool  # every scenario (else only the IPv6 record send)


LAYOUTS = (
    Layout("JSON", "JSON", "127.0.0.1", "127.0.0.2", LINES, True),
    Layout("ROCKETMQ", "ROCKETMQ", "127.0.0.1", "127.0.0.2", LINES, True),
    Layout("ipv6-born", "JSON", "::1", "127.0.0.2", ("5.3.3",), False),
    Layout("ipv6-store", "JSON", "127.0.0.1", "::1", ("5.3.3",), False),
)


@dataclass
class Window:
    line: str
    scenario: str
    start: float
    end: float = float("inf")


@dataclass
class Recording:
    layout: Layout
    frames: list[Frame] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    commit_log: bytes = b""
    notes: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)


def record_layout(layout: Layout, workdir: Path) -> Recording:
    """Run one layout end to end; every process started here is stopped before returning."""
    rec = Recording(layout)
    bind, ip1 = layout.broker_bind, layout.broker_ip1
    ns_port = free_port(("127.0.0.1",))
    ns_proxy_port = free_port(("127.0.0.1",))
    port = free_port((bind, ip1, "0.0.0.0", "::"), offsets=(-2, 0, 1))
    ns_proxy = RecordingProxy("namesrv", ("127.0.0.1", ns_proxy_port), ("127.0.0.1", ns_port))
    br_proxy = RecordingProxy("broker", (ip1, port), (bind, port))
    vip_proxy = RecordingProxy("broker-vip", (ip1, port - 2), (bind, port - 2))
    proxies = [ns_proxy, br_proxy, vip_proxy]
    servers = ReferenceServers(
        workdir,
        layout.serialize,
        namesrv_port=ns_port,
        broker_port=port,
        broker_bind=bind,
        broker_ip1=ip1,
        namesrv_addr_for_broker=f"127.0.0.1:{ns_proxy_port}",
        extra_conf=scen.BROKER_EXTRA_CONF,
    )
    ctx = scen.Context(
        namesrv=f"127.0.0.1:{ns_proxy_port}",
        broker_addr=(ip1, port),
        broker_name=servers.broker_name,
        serialize=layout.serialize,
        workdir=workdir,
    )
    with running_proxies(proxies):
        try:
            servers.start_namesrv()
            servers.start_broker()
            _wait_registered(ns_proxy)
            for line, step in scen.plan(layout.name, layout.lines):
                window = Window(line, step.name, time.time())
                rec.windows.append(window)
                result = step.run(ctx, line)
                window.end = time.time()
                rec.results.append({"line": line, "step": step.name, **result})
                log.info("%s %s %s: %s", layout.name, line, step.name, result.get("summary", ""))
            time.sleep(SETTLE_S)
            servers.stop_broker()  # its UNREGISTER_BROKER still goes through the proxy
            time.sleep(SETTLE_S)
        finally:
            servers.stop()
    for proxy in proxies:
        rec.frames.extend(proxy.frames)
        rec.connections.extend(proxy.connections)
    if servers.commit_log.exists():
        rec.commit_log = servers.commit_log.read_bytes()
    return rec


def _wait_registered(ns_proxy: RecordingProxy) -> None:
    deadline = time.monotonic() + REGISTER_WAIT_S
    while time.monotonic() < deadline:
        if any(f.direction == "s2c" for f in ns_proxy.frames):
            return
        time.sleep(0.1)
    raise TimeoutError("the broker did not register with the NameServer")


def _groups(rec: Recording) -> tuple[Callable[[Frame], str | None], Callable[[Frame], str | None]]:
    """Frame -> output group (by the window its connection opened in) and -> scenario name."""
    opened = {(c.label, c.conn_id): c.opened for c in rec.connections}
    suffix = "" if rec.layout.full else f"-{rec.layout.name}"

    def window_of(frame: Frame) -> Window | None:
        start = opened.get((frame.label, frame.conn_id), frame.timestamp)
        for window in reversed(rec.windows):
            if window.start <= start <= window.end:
                return window
        return None

    def group_of(frame: Frame) -> str | None:
        window = window_of(frame)
        if window is None:  # the broker's own connection to the NameServer
            return f"broker-5.3.3-{rec.layout.serialize}{suffix}"
        if window.line == scen.RAW_LINE:
            return f"python-{rec.layout.serialize}{suffix}"
        return f"{window.line}-{rec.layout.serialize}{suffix}"

    def scenario_of(frame: Frame) -> str | None:
        window = window_of(frame)
        return window.scenario if window else "broker-registration"

    return group_of, scenario_of


def write_recording(rec: Recording, out: Path) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Write frames and records of one layout; returns the frame counts and the record names."""
    group_of, scenario_of = _groups(rec)
    seen: list[Seen] = decode_all(rec.frames, group_of, scenario_of)
    kept = select(seen)
    write_frames(kept, out / "frames")
    pulled = pulled_records(seen)
    names: list[str] = []
    records = commit_log_records(rec.commit_log)
    for target in scen.record_targets(rec.layout.name, rec.layout.lines):
        found = target.find(records)
        if found is None:
            rec.notes.append(f"record {target.name}: not found in the commit log")
            continue
        raw, meta = found
        extra = {"layout": rec.layout.name, "description": target.description, **target.extra}
        write_record(out / "records", target.name, raw, meta, extra, pulled)
        names.append(target.name)
    return summarize(kept), names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="tests/golden")
    parser.add_argument("--layouts", default=",".join(lay.name for lay in LAYOUTS))
    parser.add_argument("--keep-work", help="keep the servers' directories here (for debugging)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    out = Path(args.out)
    wanted = args.layouts.split(",")
    started = time.monotonic()
    scen.compile_scenarios(LINES)
    for sub in ("frames", "records"):
        shutil.rmtree(out / sub, ignore_errors=True)
    report: dict[str, Any] = {"layouts": {}, "notes": []}
    for layout in LAYOUTS:
        if layout.name not in wanted:
            continue
        if "::1" in (layout.broker_bind, layout.broker_ip1) and not loopback_ipv6_available():
            report["notes"].append(f"{layout.name}: skipped, no IPv6 loopback on this machine")
            continue
        base = Path(args.keep_work) if args.keep_work else Path(tempfile.mkdtemp(prefix="golden-"))
        workdir = base / layout.name
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            t0 = time.monotonic()
            rec = record_layout(layout, workdir)
            counts, names = write_recording(rec, out)
            report["layouts"][layout.name] = {
                "seconds": round(time.monotonic() - t0, 1),
                "frames_seen": len(rec.frames),
                "connections": {
                    label: sum(1 for c in rec.connections if c.label == label)
                    for label in ("namesrv", "broker", "broker-vip")
                },
                "frames_kept": counts,
                "records": names,
                "steps": rec.results,
                "notes": rec.notes,
            }
        finally:
            if not args.keep_work:
                shutil.rmtree(base, ignore_errors=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    (out / "recording.json").write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "layouts"}, indent=1))
    for name, lay in report["layouts"].items():
        print(
            name,
            lay["seconds"],
            "s,",
            lay["frames_seen"],
            "frames seen; records:",
            lay["records"],
            lay["notes"],
        )


if __name__ == "__main__":
    main()
