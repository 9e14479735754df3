"""``rmq-gateway fault``: the fault rules and broker faults of a running gateway, over its control
endpoint.

::

    rmq-gateway fault add --control 127.0.0.1:9080 --request SEND_MESSAGE_V2 --respond 2 --times 2
    rmq-gateway fault add --control 127.0.0.1:9080 --request PULL_MESSAGE --delay-ms 3000
    rmq-gateway fault list --control 127.0.0.1:9080       # one JSON object a line
    rmq-gateway fault remove --control 127.0.0.1:9080 3
    rmq-gateway fault clear --control 127.0.0.1:9080
    rmq-gateway fault disk-full --control 127.0.0.1:9080 on    # off; status (the default)
    rmq-gateway fault rewind --control 127.0.0.1:9080 --group G --topic T --count 2
    rmq-gateway fault route --control 127.0.0.1:9876 remove broker-b   # restore NAME; list

The gateway must run with ``--control-port`` (``route``: the process that runs the NameServer).
``disk-full``, ``rewind`` and ``route`` print the endpoint's JSON answer on one line. A refused
request or an unreachable endpoint ends with one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from gateway.transport.faults import TARGETS

if TYPE_CHECKING:
    from gateway.control.client import ControlClient


def add_parser(sub: Any) -> None:
    """Add ``fault`` and its commands to the subparsers ``sub`` of ``rmq-gateway``."""
    fault = sub.add_parser(
        "fault",
        help="fault rules, full disk, deliver-again, route removal on a running gateway (--control-port)",
    )
    commands = fault.add_subparsers(dest="fault_command", required=True, metavar="FAULT_COMMAND")

    def control(p: argparse.ArgumentParser) -> None:
        p.add_argument("--control", required=True, metavar="HOST:PORT", help="the gateway's control endpoint")

    p = commands.add_parser("add", help="add a rule; prints it with its id")
    control(p)
    p.add_argument(
        "--request",
        required=True,
        help="RequestCode name (SEND_MESSAGE_V2) or number, or gRPC method (SendMessage)",
    )
    p.add_argument(
        "--target", choices=TARGETS, help="the server it applies to (broker; grpc for a gRPC method)"
    )
    p.add_argument("--topic", help="only requests for this topic")
    p.add_argument("--group", help="only requests of this consumer or producer group")
    p.add_argument(
        "--respond",
        type=_code,
        metavar="CODE",
        help="answer with this response code (2: SYSTEM_BUSY; gRPC: 42900 or TOO_MANY_REQUESTS)",
    )
    p.add_argument("--remark", help="the answer's remark (default for 2: the broker's busy text)")
    p.add_argument("--delay-ms", type=int, help="answer this much later")
    p.add_argument("--close", action="store_true", help="close the connection")
    p.add_argument("--drop", action="store_true", help="never answer")
    p.add_argument("--times", type=int, help="fire this many times, then stop")
    p.add_argument("--duration-ms", type=int, help="fire for this long after being added")
    p.add_argument("--probability", type=float, help="fire with this probability (0..1)")
    p = commands.add_parser("list", help="print every rule, one JSON object a line")
    control(p)
    p = commands.add_parser("remove", help="remove one rule")
    control(p)
    p.add_argument("id", type=int)
    p = commands.add_parser("clear", help="remove every rule")
    control(p)
    p = commands.add_parser("disk-full", help="refuse writes as a full disk does (on), stop (off), or show")
    control(p)
    p.add_argument("state", nargs="?", choices=("on", "off", "status"), default="status")
    p = commands.add_parser("rewind", help="deliver a group's last messages of each queue of a topic again")
    control(p)
    p.add_argument("--group", required=True, help="the consumer group")
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--count", type=int, default=1, help="messages per queue (default 1)")
    p = commands.add_parser(
        "route", help="take a broker out of the NameServer's routes (remove), put it back, or list"
    )
    control(p)
    p.add_argument("action", choices=("remove", "restore", "list"))
    p.add_argument("broker_name", nargs="?", metavar="BROKER_NAME", help="the brokerName (remove, restore)")


def _code(text: str) -> int | str:
    """A response code: a number, or (for gRPC) an apache.rocketmq.v2.Code name."""
    return int(text) if text.strip().lstrip("-").isdigit() else text.strip()


def rule_of(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON form of the rule ``fault add`` was given."""
    rule: dict[str, Any] = {"request": args.request}
    for key in (
        "target",
        "topic",
        "group",
        "respond",
        "remark",
        "delay_ms",
        "times",
        "duration_ms",
        "probability",
    ):
        if getattr(args, key) is not None:
            rule[key] = getattr(args, key)
    for key in ("close", "drop"):
        if getattr(args, key):
            rule[key] = True
    return rule


def run(args: argparse.Namespace) -> int:
    """Run one ``fault`` command; the exit status."""
    # Imported here: rmq-gateway builds this parser on every start, and the HTTP client (http.client,
    # email) cost ~14 ms of the server's cold start in the container, where it is never used.
    from gateway.control.client import ControlClient, ControlError

    try:
        client = ControlClient(args.control)
    except ValueError as err:
        print(f"rmq-gateway fault: --control {args.control!r}: {err}", file=sys.stderr)
        return 2
    try:
        if args.fault_command == "add":
            fault_id = client.add_fault(rule_of(args))
            print(json.dumps({"id": fault_id, **rule_of(args)}))
        elif args.fault_command == "list":
            for fault in client.faults():
                print(json.dumps(fault))
        elif args.fault_command == "remove":
            if not client.remove_fault(args.id):
                print(f"rmq-gateway fault: no fault {args.id}", file=sys.stderr)
                return 1
        elif args.fault_command == "clear":
            print(f"removed {client.clear_faults()}")
        else:
            return _broker_command(client, args)
    except ControlError as err:
        print(f"rmq-gateway fault: {err.message}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"rmq-gateway fault: cannot reach the control endpoint {args.control}: {err}", file=sys.stderr)
        return 1
    return 0


def _broker_command(client: ControlClient, args: argparse.Namespace) -> int:
    """``disk-full``, ``rewind`` or ``route``: prints the answer; the exit status. Raises what
    :class:`ControlClient` raises."""
    if args.fault_command == "disk-full":
        state = client.disk_full_state() if args.state == "status" else client.disk_full(args.state == "on")
        print(json.dumps({"diskFull": state}))
    elif args.fault_command == "rewind":
        if args.count < 1:
            print(f"rmq-gateway fault: --count {args.count}: must be at least 1", file=sys.stderr)
            return 2
        offsets = client.rewind(args.group, args.topic, args.count)
        print(json.dumps({"offsets": {str(q): o for q, o in sorted(offsets.items())}}))
    elif args.action == "list":
        print(json.dumps({"withheld": client.withheld_routes()}))
    elif not args.broker_name:
        print(f"rmq-gateway fault: route {args.action}: name the broker (BROKER_NAME)", file=sys.stderr)
        return 2
    else:
        print(json.dumps({"withheld": client.withhold_route(args.broker_name, args.action == "remove")}))
    return 0
