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

import trio

from broker.config import BrokerConfig
from codec.errors import RocketMQError
from gateway.config import ServerConfig
from gateway.launcher import BrokerSpec, Gateway, NamesrvSpec
from gateway.properties import read_properties
from namesrv.config import NamesrvConfig

logger = logging.getLogger("rmq-gateway")

DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911


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


def build_gateway(args: argparse.Namespace) -> Gateway:
    """The components a command asks for, configured from ``-c`` and the flags (flags win).

    Raises ``OSError`` when the config file cannot be read and ``ValueError`` for a bad value.
    """
    props = read_properties(args.config) if args.config else {}
    namesrv = broker = None
    if args.command in ("namesrv", "standalone"):
        namesrv = NamesrvSpec(
            NamesrvConfig.from_properties(props), ServerConfig(host=args.host, port=args.namesrv_port)
        )
    if args.command in ("broker", "standalone"):
        config = BrokerConfig.from_properties(props)
        config.listen_port = args.broker_port
        if args.store is not None or "storePathRootDir" not in props:
            config.store_path_root_dir = args.store or "./data"
        if args.command == "broker":
            config.namesrv_addr = (
                args.namesrv_addr or os.environ.get("NAMESRV_ADDR") or f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"
            )
        broker = BrokerSpec(
            config,
            ServerConfig(host=args.host, port=args.broker_port),
            use_local_namesrv=args.command == "standalone",
        )
    return Gateway(namesrv, broker)


async def run_gateway(gateway: Gateway) -> None:
    """Run ``gateway``, announce ``ready``, and stop it on SIGINT/SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            endpoints = await nursery.start(gateway.run)
            parts = [
                f"{name}={addr}"
                for name, addr in (("namesrv", endpoints.namesrv_addr), ("broker", endpoints.broker_addr))
                if addr is not None
            ]
            logger.info("ready: %s", " ".join(parts))
            async for signum in signals:
                logger.info("received %s, shutting down", signal.Signals(signum).name)
                break
            gateway.shutdown()
    logger.info("stopped")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        gateway = build_gateway(args)
    except (OSError, ValueError, RocketMQError) as err:
        logger.error("cannot start: %s", err)
        return 2
    status = 0
    try:
        trio.run(run_gateway, gateway)
    except* (OSError, RocketMQError) as group:
        for exc in group.exceptions:
            logger.error("cannot start: %s", exc)
        status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
