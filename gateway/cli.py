"""``rmq-gateway``: run the NameServer, the Broker, or both in one process.

::

    rmq-gateway standalone                  # NameServer :9876 + Broker :10911, store in ./data
    rmq-gateway namesrv --namesrv-port 9876 -c namesrv.conf
    rmq-gateway broker --broker-port 10911 --store /var/rmq -c broker.conf

Once every server accepts connections one log line containing ``ready`` names the bound
addresses. SIGTERM and SIGINT stop accepting, let in-flight requests finish, flush state and exit.
``-c`` reads RocketMQ's own ``namesrv.conf`` / ``broker.conf`` property keys; command-line flags
override the file; ``NAMESRV_ADDR`` is honoured as in RocketMQ.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, Protocol

import trio

from codec.errors import RocketMQError
from gateway.config import ServerConfig
from gateway.properties import read_properties

logger = logging.getLogger("rmq-gateway")

DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911
STOP_TIMEOUT_S = 15.0
STANDALONE_NAMESRV = "<standalone>"


class App(Protocol):
    name: str

    async def run(self, *, task_status: Any = ...) -> None: ...

    def shutdown(self) -> None: ...


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rmq-gateway",
        description="A RocketMQ-compatible NameServer and Broker (remoting protocol, RocketMQ store format).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
        )
        p.add_argument(
            "-c", "--config", metavar="FILE", help="RocketMQ properties file (namesrv.conf / broker.conf)"
        )
        p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")

    def namesrv_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--namesrv-port", type=int, default=DEFAULT_NAMESRV_PORT, help="NameServer port (9876)"
        )

    def broker_flags(p: argparse.ArgumentParser, standalone: bool) -> None:
        p.add_argument("--broker-port", type=int, default=DEFAULT_BROKER_PORT, help="Broker port (10911)")
        p.add_argument(
            "--store",
            default=None,
            metavar="DIR",
            help="store root directory (default: storePathRootDir from -c, else ./data)",
        )
        if not standalone:
            p.add_argument(
                "--namesrv-addr",
                default=None,
                help="NameServer address(es), ';'-separated (default: $NAMESRV_ADDR or 127.0.0.1:9876)",
            )

    p = sub.add_parser("namesrv", help="run a NameServer")
    common(p)
    namesrv_flags(p)
    p = sub.add_parser("broker", help="run a Broker that registers to NameServers")
    common(p)
    broker_flags(p, standalone=False)
    p = sub.add_parser("standalone", help="run a NameServer and a Broker in one process (local store)")
    common(p)
    namesrv_flags(p)
    broker_flags(p, standalone=True)
    return parser


def build_apps(args: argparse.Namespace) -> list[App]:
    """Construct the components a command asks for (imports are local: each is optional)."""
    props = read_properties(args.config) if args.config else {}
    apps: list[App] = []
    if args.command in ("namesrv", "standalone"):
        from namesrv.app import NamesrvApp
        from namesrv.config import NamesrvConfig

        apps.append(
            NamesrvApp(
                NamesrvConfig.from_properties(props), ServerConfig(host=args.host, port=args.namesrv_port)
            )
        )
    if args.command in ("broker", "standalone"):
        from broker.app import BrokerApp
        from broker.config import BrokerConfig

        if args.command == "standalone":
            namesrv_addr = STANDALONE_NAMESRV  # filled in with the address the NameServer binds
        else:
            namesrv_addr = (
                args.namesrv_addr or os.environ.get("NAMESRV_ADDR") or f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"
            )
        config = BrokerConfig.from_properties(props)
        config.namesrv_addr = namesrv_addr
        config.listen_port = args.broker_port
        if args.store is not None or "storePathRootDir" not in props:
            config.store_path_root_dir = args.store or "./data"
        apps.append(BrokerApp(config, ServerConfig(host=args.host, port=args.broker_port)))
    return apps


async def run_apps(apps: Sequence[App]) -> None:
    """Start every app in order, announce ``ready``, and stop them all on SIGINT/SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            addresses = []
            namesrv_addr = None
            for app in apps:
                config = getattr(app, "config", None)
                if namesrv_addr and getattr(config, "namesrv_addr", None) == STANDALONE_NAMESRV:
                    config.namesrv_addr = namesrv_addr  # type: ignore[union-attr]
                server = await nursery.start(app.run)
                addresses.append(f"{app.name}={','.join(server.addresses)}")
                if app.name == "namesrv":
                    namesrv_addr = _loopback_if_wildcard(server.addresses[0])
            logger.info("ready: %s", " ".join(addresses))
            async for signum in signals:
                logger.info("received %s, shutting down", signal.Signals(signum).name)
                break
            for app in reversed(apps):
                app.shutdown()
            nursery.cancel_scope.deadline = trio.current_time() + STOP_TIMEOUT_S
    logger.info("stopped")


def _loopback_if_wildcard(address: str) -> str:
    host, _, port = address.rpartition(":")
    return f"127.0.0.1:{port}" if host in ("0.0.0.0", "[::]") else address


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        apps = build_apps(args)
    except (OSError, ValueError, RocketMQError) as err:
        logger.error("cannot start: %s", err)
        return 2
    status = 0
    try:
        trio.run(run_apps, apps)
    except* (OSError, RocketMQError) as group:
        for exc in group.exceptions:
            logger.error("cannot start: %s", exc)
        status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
