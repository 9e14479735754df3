"""Server CPU per message of sync sends over sockets, ACL 2.0 and TLS each off and on, ours beside
the real broker in the same run.

For each setting, each broker (``rmq-gateway standalone``; the real 5.3.3 broker from Maven
Central's jars) is started afresh, off then on, and the 5.3.3 Java producer of
``rmqcompat.AuthScenario`` sends ``--warmup`` messages, then ``--sends`` more one at a time (sync,
1 thread). The settings:

* ``acl``: ``authenticationEnabled`` + ``authorizationEnabled``, the producer signing with
  ``AclClientRPCHook`` as the ``initAuthenticationUser`` SUPER user (the ACL entries are not
  walked);
* ``tls``: ``-Dtls.server.mode=enforcing`` on the servers, ``-Dtls.enable=true`` (test mode: the
  servers' self-signed certificate is trusted) on the producer.

The server process's CPU (utime + stime from ``/proc``) over the measured sends, divided by their
number, is the figure; the producer's JVM is not counted. Ours counts the whole gateway process
(its NameServer is idle during the sends); the real broker's is the broker JVM alone.

    python -m bench.auth.end_to_end [--settings acl,tls] [--targets gateway,reference]
                                    [--sends 3000] [--warmup 1000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from broker.auth.config import acl_conf
from compat_tests.scenario import CLIENT_LINES, run_program
from compat_tests.targets import GatewayTarget, ReferenceTarget, Target, start_target

ROOT, ROOT_SECRET = "bench-root", "bench-root-secret"
AUTH_CONF = acl_conf(ROOT, ROOT_SECRET)
TICKS = os.sysconf("SC_CLK_TCK")
SETTINGS = ("acl", "tls")
TLS_SERVER = ("tls.server.mode=enforcing",)
TLS_CLIENT = ("tls.enable=true", "tls.test.mode.enable=true")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_pid(target: object) -> int:
    if isinstance(target, GatewayTarget) and target.proc is not None:
        return target.proc.pid
    if isinstance(target, ReferenceTarget) and target.servers.broker is not None:
        return target.servers.broker.pid
    raise RuntimeError(f"no server process for {target!r}")


def produce(namesrv: str, home: Path, count: int, setting: str, on: bool) -> None:
    args: dict[str, str | int | None] = {"topic": "BenchAuth", "count": count}
    if setting == "acl" and on:
        args |= {"ak": ROOT, "sk": ROOT_SECRET}
    props = TLS_CLIENT if setting == "tls" and on else ()
    events = run_program(
        "rmqcompat.AuthScenario", CLIENT_LINES[-1], "produce", namesrv, home, 600, args, props, jvm_options=()
    )
    sent = sum(1 for e in events if e.get("event") == "sent")
    if sent != count:
        raise RuntimeError(f"{sent} of {count} sent: {events[-1:]}")


def start(name: str, workdir: Path, setting: str, on: bool) -> Target:
    if setting == "acl":
        return start_target(name, workdir, AUTH_CONF if on else None)
    props = TLS_SERVER if on else ()
    return GatewayTarget(workdir, None, props) if name == "gateway" else ReferenceTarget(workdir, None, props)


def measure(name: str, setting: str, on: bool, sends: int, warmup: int) -> float:
    """Server CPU µs per sync send of a fresh ``name`` target with ``setting`` off or on."""
    with tempfile.TemporaryDirectory() as tmp:
        target = start(name, Path(tmp) / "server", setting, on)
        try:
            produce(target.namesrv_addr, Path(tmp) / "client", warmup, setting, on)
            pid = server_pid(target)
            before = cpu_seconds(pid)
            produce(target.namesrv_addr, Path(tmp) / "client", sends, setting, on)
            return (cpu_seconds(pid) - before) / sends * 1e6
        finally:
            target.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--targets", default="gateway,reference")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="acl, tls or both")
    args = parser.parse_args()
    targets = args.targets.split(",")
    print(f"server CPU µs per sync send ({args.sends} sends of 6-10 byte bodies after {args.warmup})")
    print(f"{'setting':8s} " + " ".join(f"{name + ' off':>14s} {name + ' on':>14s}" for name in targets))
    for setting in args.settings.split(","):
        if setting not in SETTINGS:
            parser.error(f"unknown setting {setting!r}: {', '.join(SETTINGS)}")
        cells = [
            measure(name, setting, on, args.sends, args.warmup) for name in targets for on in (False, True)
        ]
        print(f"{setting:8s} " + " ".join(f"{cell:14.0f}" for cell in cells), flush=True)


if __name__ == "__main__":
    main()
