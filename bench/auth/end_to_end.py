"""Server CPU per message of sync sends over sockets, ACL 2.0 off and on, ours and the real broker.

For each broker (``rmq-gateway standalone``; the real 5.3.3 broker from Maven Central's jars) and
each setting (off; ``authenticationEnabled`` + ``authorizationEnabled``), a fresh target is
started, the 5.3.3 Java producer of ``rmqcompat.AuthScenario`` sends ``--warmup`` messages, then
``--sends`` more one at a time (sync, 1 thread), signed with ``AclClientRPCHook`` when ACL is on
(as the ``initAuthenticationUser`` SUPER user: the ACL entries are not walked). The server
process's CPU (utime + stime from ``/proc``) over the measured sends, divided by their number, is
the figure; the producer's JVM is not counted. Ours counts the whole gateway process (its
NameServer is idle during the sends).

    python -m bench.auth.end_to_end [--sends 3000] [--warmup 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from broker.auth.config import LOCAL_AUTHN_METADATA, LOCAL_AUTHZ_METADATA
from compat_tests.scenario import CLIENT_LINES, run_program
from compat_tests.targets import GatewayTarget, ReferenceTarget, start_target

ROOT, ROOT_SECRET = "bench-root", "bench-root-secret"
AUTH_CONF = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": LOCAL_AUTHN_METADATA,
    "authorizationMetadataProvider": LOCAL_AUTHZ_METADATA,
    "initAuthenticationUser": json.dumps({"username": ROOT, "password": ROOT_SECRET}),
}
TICKS = os.sysconf("SC_CLK_TCK")


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


def produce(namesrv: str, home: Path, count: int, signed: bool) -> None:
    args: dict[str, str | int | None] = {"topic": "BenchAuth", "count": count}
    if signed:
        args |= {"ak": ROOT, "sk": ROOT_SECRET}
    events = run_program("rmqcompat.AuthScenario", CLIENT_LINES[-1], "produce", namesrv, home, 600, args)
    sent = sum(1 for e in events if e.get("event") == "sent")
    if sent != count:
        raise RuntimeError(f"{sent} of {count} sent: {events[-1:]}")


def measure(name: str, signed: bool, sends: int, warmup: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        target = start_target(name, Path(tmp) / "server", AUTH_CONF if signed else None)
        try:
            produce(target.namesrv_addr, Path(tmp) / "client", warmup, signed)
            pid = server_pid(target)
            before = cpu_seconds(pid)
            produce(target.namesrv_addr, Path(tmp) / "client", sends, signed)
            return (cpu_seconds(pid) - before) / sends * 1e6
        finally:
            target.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--targets", default="gateway,reference")
    args = parser.parse_args()
    for name in args.targets.split(","):
        for signed in (False, True):
            micros = measure(name, signed, args.sends, args.warmup)
            print(
                f"{name:9s} ACL {'on ' if signed else 'off'}: {micros:.0f} µs server CPU per sync send",
                flush=True,
            )


if __name__ == "__main__":
    main()
