"""``rmq-compat``: run the compatibility scenarios against any RocketMQ cluster and report.

    rmq-compat --namesrv 10.0.0.5:9876 [--grpc 10.0.0.5:8081] [--quick] [--json r.json]

Exit status 0 only when every selected scenario passed; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from compat_tests.tool import report
from compat_tests.tool.catalogue import all_tags, catalogue, select
from compat_tests.tool.goenv import GoEnv
from compat_tests.tool.javaenv import JavaEnv
from compat_tests.tool.model import Outcome, Scenario, TargetReport, TargetSpec
from compat_tests.tool.runner import RunOptions, run_all
from gateway.transport.address import split_address

DEFAULT_TIMEOUT_S = 180.0


def _address(text: str) -> str:
    try:
        split_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}") from err
    return text


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rmq-compat", description=__doc__.split("\n\n")[0])
    p.add_argument("--namesrv", type=_address, help="NameServer HOST:PORT of the cluster under test")
    p.add_argument("--grpc", type=_address, help="gRPC endpoint HOST:PORT (gRPC rows are not run without it)")
    p.add_argument("--cluster", help="cluster whose brokers get the scenario topics (default: every cluster)")
    p.add_argument("--access-key", help="ACL 2.0 access key (signs admin requests and the ACL rows)")
    p.add_argument("--secret-key", help="ACL 2.0 secret key")
    p.add_argument("--tls", action="store_true", help="the target's ports speak TLS")
    p.add_argument("--list", action="store_true", help="list the scenarios with their tags and exit")
    p.add_argument("--only", metavar="TAGS", help="comma-separated tags or client names to keep")
    p.add_argument("--exclude", metavar="TAGS", help="comma-separated tags or client names to leave out")
    p.add_argument("--quick", action="store_true", help="one scenario per feature")
    p.add_argument("--json", type=Path, metavar="FILE")
    p.add_argument("--junit", type=Path, metavar="FILE")
    p.add_argument("--html", type=Path, metavar="FILE")
    p.add_argument(
        "--against", metavar="HOST:PORT[,GRPC]", help="a second target: run on both, differences first"
    )
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per scenario (%(default)g)"
    )
    p.add_argument("--jobs", type=int, default=2, help="scenarios run at the same time (%(default)s)")
    p.add_argument("--keep", action="store_true", help="keep the topics, groups and work files")
    return p


def excluded(args: argparse.Namespace) -> str:
    """``--exclude`` plus the rows whose option was not given (ACL without keys, TLS without
    ``--tls``), unless ``--only`` names them or ``--list`` shows everything."""
    excluded = {t for t in (args.exclude or "").split(",") if t.strip()}
    asked = {t.strip() for t in (args.only or "").split(",")}
    if not args.list:
        if not args.access_key and "acl" not in asked:
            excluded.add("acl")
        if not args.tls and "tls" not in asked:
            excluded.add("tls")
    return ",".join(sorted(excluded))


def listing(scenarios: list[Scenario]) -> str:
    lines = [f"{s.id:<40} {'quick ' if s.quick else '      '}{','.join(sorted(s.tags)):<30} {s.description}"
             for s in scenarios]  # fmt: skip
    return "\n".join([*lines, f"tags: {', '.join(all_tags(scenarios))}"])


def _progress(outcome: Outcome, done: int, total: int) -> None:
    tty = sys.stderr.isatty()
    text = f"[{done}/{total}] {outcome.scenario.id}: {outcome.status} ({outcome.seconds:.0f} s)"
    sys.stderr.write(("\r\x1b[K" + text) if tty else text + "\n")
    if tty and done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _target(args: argparse.Namespace, namesrv: str, grpc: str | None) -> TargetSpec:
    return TargetSpec(namesrv, grpc, args.cluster, args.access_key, args.secret_key, args.tls)


def _second(args: argparse.Namespace, p: argparse.ArgumentParser) -> TargetSpec | None:
    if not args.against:
        return None
    parts = args.against.split(",")
    try:
        addresses = [_address(part) for part in parts]
    except argparse.ArgumentTypeError as err:
        p.error(f"--against: {err}")
    if len(addresses) > 2:
        p.error("--against takes HOST:PORT[,GRPC_HOST:PORT]")
    return _target(args, addresses[0], addresses[1] if len(addresses) > 1 else None)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        scenarios = select(catalogue(), args.only, excluded(args), args.quick)
    except ValueError as err:
        p.error(str(err))
    if args.list:
        print(listing(scenarios))
        return 0
    if not args.namesrv:
        p.error("--namesrv HOST:PORT is required")
    if args.timeout <= 0 or args.jobs < 1:
        p.error("--timeout must be positive and --jobs at least 1")
    if bool(args.access_key) != bool(args.secret_key):
        p.error("--access-key and --secret-key go together")
    targets = [_target(args, args.namesrv, args.grpc)]
    second = _second(args, p)
    if second is not None:
        targets.append(second)
    java, go = JavaEnv(), GoEnv()
    prefix = "rc" + _base36(int(time.time()))
    reports: list[TargetReport] = []
    with tempfile.TemporaryDirectory(prefix="rmq-compat-") as work:
        for n, target in enumerate(targets):
            sys.stderr.write(
                f"rmq-compat: {len(scenarios)} scenarios against {target.label} (prefix {prefix})\n"
            )
            options = RunOptions(
                f"{prefix}{'ab'[n]}", Path(work) / str(n), args.timeout, args.keep, args.jobs
            )
            reports.append(run_all(scenarios, target, java, options, _progress, go))
    diffs = report.differences(reports[0], reports[1]) if len(reports) == 2 else []
    if len(reports) == 2:
        print(report.difference_text(reports[0], reports[1], diffs))
        print()
    print("\n\n".join(report.table(r) for r in reports))
    if args.json:
        args.json.write_text(report.to_json(reports, diffs), encoding="utf-8")
    if args.junit:
        args.junit.write_text(report.to_junit(reports), encoding="utf-8")
    if args.html:
        args.html.write_text(report.to_html(reports, diffs), encoding="utf-8")
    return 0 if all(o.passed for r in reports for o in r.outcomes) else 1


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
    return out or "0"


if __name__ == "__main__":
    sys.exit(main())
