"""``rmq-gateway``: run the NameServer, the Broker, or both in one process.

::

    rmq-gateway standalone                  # NameServer :9876 + Broker :10911, store in ./data
    rmq-gateway namesrv --namesrv-port 9876 -c namesrv.conf
    rmq-gateway broker --broker-port 10911 --store /var/rmq -c broker.conf
    rmq-gateway standalone --grpc-port 8081   # RocketMQ 5 clients (gRPC, TLS or plaintext)
    rmq-gateway standalone -Dtls.server.mode=enforcing   # TLS only, on every port
    rmq-gateway standalone --control-port 9080   # HTTP control endpoint: faults, stored messages
    rmq-gateway fault add --control 127.0.0.1:9080 --request SEND_MESSAGE_V2 --respond 2 --times 2

Once every server accepts connections one log line containing ``ready`` names the bound
addresses. SIGTERM and SIGINT stop accepting, let in-flight requests finish, flush state and exit.
``-c`` reads RocketMQ's own ``namesrv.conf`` / ``broker.conf`` property keys; command-line flags
override the file; ``NAMESRV_ADDR`` is honoured as in RocketMQ. ``-Dkey=value`` sets what the
JVM takes as system properties: the ``tls.*`` keys of ``TlsSystemConfig`` (docs/security.md).
``--topic``, ``--group``, ``-f resources.toml`` and ``RMQ_GATEWAY_TOPICS`` / ``RMQ_GATEWAY_GROUPS``
declare topics and groups created before ``ready`` (:mod:`gateway.resources`); a bad one is
refused with ``cannot start: topic '...': ...`` (exit 2).
``--control-port`` (or ``RMQ_GATEWAY_CONTROL_PORT``) serves the HTTP control endpoint of
docs/testing-with-gateway.md on ``--host``; ``rmq-gateway fault`` (:mod:`gateway.control.cli`)
drives it.

What cannot work is refused with one line and a non-zero exit, never a traceback: argparse
refuses a port outside 0..65535 or an unknown ``--log-level`` (exit 2); a malformed value in the
config file, a store setting out of range or a bad NameServer address is refused before anything
listens (exit 2); a port in use or a listen address that does not resolve ends start-up with
``cannot start: <what> (<host>:<port>)`` (exit 1). Keys no component reads are logged once each.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import trio

from broker.config import BrokerConfig
from codec.errors import RocketMQError
from codec.java_properties import parse_properties
from gateway import native
from gateway.control import cli as fault_cli
from gateway.control.server import ControlConfig
from gateway.launcher import (
    BrokerSpec,
    Gateway,
    NamesrvSpec,
    check_specs,
    grpc_config_of,
    log_unused_property_keys,
)
from gateway.resources import Resources, load_resource_file, parse_specs, resources_from_env
from gateway.transport.config import ServerConfig
from gateway.transport.tls_config import ALL_KEYS as TLS_KEYS
from gateway.transport.tls_config import TlsSystemConfig, tls_system_config_of
from namesrv.config import NamesrvConfig

logger = logging.getLogger("rmq-gateway")

DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _port(text: str) -> int:
    """A TCP port for argparse: 0 (any free port) .. 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0..65535")
    return port


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (one of {', '.join(LOG_LEVELS)})")
    return level


def _system_property(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of a ``-D`` flag, as the JVM takes it (``-Dkey`` alone is an empty value)."""
    key, _, value = text.partition("=")
    if not key:
        raise argparse.ArgumentTypeError(f"not a KEY=VALUE system property: {text!r}")
    return key, value


def tls_config_of(args: argparse.Namespace, props: Mapping[str, str]) -> TlsSystemConfig:
    """The ``tls.*`` settings as the JVM's ``TlsSystemConfig`` reads them: ``-D`` flags, then the
    keys of ``tls.config.file`` (``/etc/rocketmq/tls.properties`` unless set; skipped when it is
    not a readable file, as ``TlsHelper`` does); ``useTLS`` of ``-c`` (``NettyClientConfig``, via
    ``MixAll.properties2Object``) sets the broker's ``tls.enable``. ``-D`` keys nothing reads are
    logged. Raises OSError when a config file that exists cannot be read."""
    system = dict(args.system_properties)
    for key in system:
        if key not in TLS_KEYS:
            logger.warning("system property %s is not used by this gateway (ignored)", key)
    config = tls_system_config_of(system)
    file = Path(config.config_file)
    if file.is_file() and os.access(file, os.R_OK):
        config = tls_system_config_of(system, parse_properties(file.read_text(encoding="utf-8")))
        logger.info("TLS settings read from %s", file)
    if "useTLS" in props:
        config.enable = props["useTLS"].strip().lower() == "true"
    return config


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
        p.add_argument(
            "--log-level", type=_log_level, default="INFO", help=f"{', '.join(LOG_LEVELS)} (default INFO)"
        )
        p.add_argument(
            "-D",
            dest="system_properties",
            type=_system_property,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a Java system property RocketMQ reads, e.g. -Dtls.server.mode=enforcing, -Dtls.enable=true"
            " (the tls.* keys; docs/security.md)",
        )
        control = os.environ.get("RMQ_GATEWAY_CONTROL_PORT", "").strip()
        p.add_argument(
            "--control-port",
            type=_port,
            default=control or None,  # argparse checks a string default with _port too
            help="serve the HTTP control endpoint (fault rules, stored messages) on this port of --host"
            " (0 = any free port; default $RMQ_GATEWAY_CONTROL_PORT, else off)",
        )

    def namesrv_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--namesrv-port", type=_port, default=DEFAULT_NAMESRV_PORT, help="NameServer port (9876)"
        )

    def broker_flags(p: argparse.ArgumentParser, standalone: bool) -> None:
        p.add_argument("--broker-port", type=_port, default=DEFAULT_BROKER_PORT, help="Broker port (10911)")
        p.add_argument(
            "--store",
            default=None,
            metavar="DIR",
            help="store root directory (default: storePathRootDir from -c, else ./data)",
        )
        p.add_argument(
            "--grpc-port",
            type=_port,
            default=None,
            help="gRPC endpoint port for RocketMQ 5 clients, TLS and plaintext (default: grpcServerPort"
            " from -c, else 8081; 0 = any free port, also the default with --broker-port 0)",
        )
        p.add_argument("--no-grpc", action="store_true", help="do not serve the gRPC endpoint")
        p.add_argument(
            "--topic",
            dest="topics",
            action="append",
            default=[],
            metavar="NAME[:QUEUES[:TYPE]]",
            help="create this topic before ready (repeatable; QUEUES default 8; TYPE NORMAL, FIFO, DELAY"
            " or TRANSACTION); also $RMQ_GATEWAY_TOPICS, comma-separated",
        )
        p.add_argument(
            "--group",
            dest="groups",
            action="append",
            default=[],
            metavar="NAME[:KEY=VALUE,...]",
            help="create this consumer group before ready (repeatable; KEY a SubscriptionGroupConfig"
            " field, e.g. retryMaxTimes=3); also $RMQ_GATEWAY_GROUPS, semicolon-separated",
        )
        p.add_argument(
            "-f",
            "--resources",
            metavar="FILE",
            help="TOML file of [topics.NAME] and [groups.NAME] tables to create before ready",
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
    fault_cli.add_parser(sub)
    return parser


def build_gateway(args: argparse.Namespace) -> Gateway:
    """The components a command asks for, configured from ``-c`` and the flags (flags win).

    Raises ``OSError`` when the config file cannot be read and ``ValueError`` for a bad value
    (:func:`gateway.launcher.check_specs`); logs the keys of ``-c`` no component reads.
    """
    props = parse_properties(Path(args.config).read_text(encoding="utf-8")) if args.config else {}
    namesrv = broker = None
    resources = Resources()
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
        grpc = None
        if not args.no_grpc:
            grpc_port = args.grpc_port
            if grpc_port is None and args.broker_port == 0 and "grpcServerPort" not in props:
                grpc_port = 0  # a broker on any free port: so is its endpoint (tests run side by side)
            grpc = grpc_config_of(props, args.host, grpc_port)
            args.grpc_port = grpc.grpc_server_port  # a start-up error names the port tried
        broker = BrokerSpec(
            config,
            ServerConfig(host=args.host, port=args.broker_port),
            use_local_namesrv=args.command == "standalone",
            grpc=grpc,
        )
        resources = declared_resources(args, os.environ)
    tls = tls_config_of(args, props)
    check_specs(namesrv, broker, tls)
    log_unused_property_keys(props, namesrv=namesrv is not None, broker=broker is not None)
    control = None if args.control_port is None else ControlConfig(args.host, args.control_port)
    return Gateway(namesrv, broker, tls, control=control, resources=resources)


def declared_resources(args: argparse.Namespace, env: Mapping[str, str]) -> Resources:
    """The topics and groups of the environment, then ``-f``, then ``--topic`` / ``--group``
    (a later declaration of a name wins); raises :class:`ResourceSpecError`."""
    resources = resources_from_env(env)
    if args.resources:
        resources = resources.merged(load_resource_file(args.resources))
    return resources.merged(parse_specs(args.topics, args.groups))


async def run_gateway(gateway: Gateway) -> None:
    """Run ``gateway``, announce ``ready``, and stop it on SIGINT/SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            endpoints = await nursery.start(gateway.run)
            parts = [
                f"{name}={addr}"
                for name, addr in (
                    ("namesrv", endpoints.namesrv_addr),
                    ("broker", endpoints.broker_addr),
                    ("grpc", endpoints.grpc_addr),
                    ("control", endpoints.control_addr),
                )
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
    if args.command == "fault":
        return fault_cli.run(args)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logger.info("hot path: %s", native.describe())  # compiled with mypyc, or pure (and why)
    try:
        gateway = build_gateway(args)
    except (OSError, ValueError, RocketMQError) as err:
        logger.error("cannot start: %s", err)
        return 2
    status = 0
    try:
        trio.run(run_gateway, gateway)
    except* (OSError, RocketMQError) as group:
        for exc in _leaves(group):
            logger.error("cannot start: %s", _describe(exc, args))
        status = 1
    return status


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, so each gets its own line."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _describe(error: BaseException, args: argparse.Namespace) -> str:
    """One line for a start-up failure, naming the flag to change where we know it."""
    if isinstance(error, socket.gaierror):
        return f"listen address --host {args.host!r} does not resolve: {error.strerror or error}"
    if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
        ports = [
            f"--{name}-port {getattr(args, f'{name}_port')}"
            for name in ("namesrv", "broker", "grpc", "control")
            if getattr(args, f"{name}_port", None) is not None
        ]
        return f"{args.host}: a port is already in use ({', '.join(ports)}): another process listens there"
    if isinstance(error, OSError) and error.errno == errno.EADDRNOTAVAIL:
        return f"listen address --host {args.host!r} is not an address of this machine: {error.strerror}"
    return str(error)


if __name__ == "__main__":
    raise SystemExit(main())
