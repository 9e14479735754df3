"""A protocol health probe: is a NameServer answering, and has a broker registered to it?

::

    python -m gateway.testing.probe 127.0.0.1:9876                  # >= 1 broker registered
    python -m gateway.testing.probe 127.0.0.1:9876 --topic TBW102   # and a route for the topic
    python -m gateway.testing.probe 127.0.0.1:9876 --broker-name broker-b --brokers 2
    python -m gateway.testing.probe 127.0.0.1:9876 --broker-name broker-a --broker-id 1   # its slave

One blocking socket and the project's codec, no Trio: the probe sends GET_BROKER_CLUSTER_INFO
(what ``mqadmin clusterList`` sends; ``ClusterInfo`` body) and, with ``--topic``,
GET_ROUTEINFO_BY_TOPIC (what every client sends before its first send), exactly as a Java client
would. Ready means the NameServer answers and the wanted brokers are registered with a master
address, which is what a client needs before it can send; with ``--broker-id`` (a slave's
``brokerId``, e.g. 1), that the named broker has registered an address under that id too, which
is what a client reading from the slave needs. Exit status 0 when ready (one summary
line on stdout), 1 when not (the reason on stderr); the container's HEALTHCHECK and the
testcontainers module both use it.
"""

from __future__ import annotations

import argparse
import itertools
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from codec.bodies.route import ClusterInfo, TopicRouteData
from codec.codes import LanguageCode, RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.frame import FrameDecoder, encode_frame

CONNECT_TIMEOUT_S = 2.0  # one probe attempt; a healthy NameServer answers in milliseconds
POLL_INTERVAL_S = 0.01  # between attempts of wait_ready: a refused connect costs ~0.1 ms
RECV_CHUNK = 64 * 1024

_opaques = itertools.count(1)


class ProbeError(Exception):
    """The server is not (yet) ready; the message says why."""


@dataclass(frozen=True)
class ProbeResult:
    """What a successful probe saw: broker name -> master address, per cluster."""

    namesrv_addr: str
    clusters: dict[str, list[str]]
    masters: dict[str, str]
    topic_brokers: tuple[str, ...] = ()

    def summary(self) -> str:
        brokers = ", ".join(f"{name}@{addr}" for name, addr in sorted(self.masters.items()))
        text = f"{self.namesrv_addr}: {len(self.masters)} broker(s) registered: {brokers}"
        if self.topic_brokers:
            text += f"; route on {', '.join(self.topic_brokers)}"
        return text


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) into its parts; raises ``ValueError``."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not a host:port address: {address!r}")
    return host.strip("[]"), int(port)


def call(sock: socket.socket, request: RemotingCommand, timeout: float) -> RemotingCommand:
    """Send ``request`` and return the response with its opaque; raises ``OSError``/``TimeoutError``."""
    sock.settimeout(timeout)
    sock.sendall(encode_frame(request))
    decoder = FrameDecoder()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunk = sock.recv(RECV_CHUNK)
        if not chunk:
            raise ConnectionError("connection closed before the response")
        for command in decoder.feed(chunk):
            if command.is_response and command.opaque == request.opaque:
                return command
    raise TimeoutError(f"no response within {timeout:g} s")


def _request(code: int, header: dict[str, str] | None = None) -> RemotingCommand:
    request = RemotingCommand.request(code, header, opaque=next(_opaques))
    request.language = LanguageCode.PYTHON
    return request


def probe(
    namesrv_addr: str,
    *,
    min_brokers: int = 1,
    broker_name: str | None = None,
    broker_id: int | None = None,
    topic: str | None = None,
    timeout: float = CONNECT_TIMEOUT_S,
) -> ProbeResult:
    """One probe of ``namesrv_addr``; raises :class:`ProbeError` when it is not ready.
    ``broker_id`` (with ``broker_name``): that broker also has an address registered under this
    id, e.g. 1 for its slave."""
    try:
        with socket.create_connection(split_address(namesrv_addr), timeout=timeout) as sock:
            answer = call(sock, _request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout)
            if answer.code != ResponseCode.SUCCESS:
                raise ProbeError(f"cluster info answered code {answer.code}: {answer.remark}")
            info = ClusterInfo.decode(answer.body) if answer.body else ClusterInfo()
            masters = {
                name: addr
                for name, data in info.broker_addr_table.items()
                if (addr := data.master_addr()) is not None
            }
            if len(masters) < min_brokers:
                raise ProbeError(f"{len(masters)} broker(s) registered, waiting for {min_brokers}")
            if broker_name is not None and broker_name not in masters:
                raise ProbeError(f"{broker_name} not registered (registered: {sorted(masters)})")
            if broker_name is not None and broker_id is not None:
                ids = sorted(info.broker_addr_table[broker_name].broker_addrs)
                if broker_id not in ids:
                    raise ProbeError(f"{broker_name} has no broker id {broker_id} (registered ids: {ids})")
            routed: tuple[str, ...] = ()
            if topic is not None:
                answer = call(sock, _request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), timeout)
                if answer.code != ResponseCode.SUCCESS:
                    raise ProbeError(f"no route for {topic}: code {answer.code} {answer.remark}")
                route = TopicRouteData.decode(answer.body)
                routed = tuple(sorted(b.broker_name for b in route.broker_datas))
    except (OSError, RocketMQError) as err:
        raise ProbeError(f"{namesrv_addr}: {err}") from err
    return ProbeResult(namesrv_addr, info.cluster_addr_table, masters, routed)


def wait_ready(
    namesrv_addr: str,
    timeout: float,
    *,
    min_brokers: int = 1,
    broker_name: str | None = None,
    broker_id: int | None = None,
    topic: str | None = None,
) -> ProbeResult:
    """Probe until ready or ``timeout`` seconds passed; raises ``TimeoutError`` with the last reason."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return probe(
                namesrv_addr,
                min_brokers=min_brokers,
                broker_name=broker_name,
                broker_id=broker_id,
                topic=topic,
                timeout=min(CONNECT_TIMEOUT_S, max(0.1, deadline - time.monotonic())),
            )
        except ProbeError as err:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"not ready within {timeout:g} s: {err}") from err
        time.sleep(POLL_INTERVAL_S)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gateway.testing.probe",
        description="Exit 0 when the NameServer answers and the wanted brokers are registered.",
    )
    parser.add_argument("namesrv_addr", metavar="ADDR", help="NameServer host:port")
    parser.add_argument("--brokers", type=int, default=1, help="brokers that must be registered (1)")
    parser.add_argument("--broker-name", help="a broker (brokerName) that must be registered")
    parser.add_argument(
        "--broker-id", type=int, help="with --broker-name: an id it must have an address under (1: a slave)"
    )
    parser.add_argument("--topic", help="a topic that must have a route")
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT_S, help="seconds per request")
    parser.add_argument("--wait", type=float, default=0.0, help="keep probing up to this many seconds")
    args = parser.parse_args(argv)
    if args.broker_id is not None and args.broker_name is None:
        parser.error("--broker-id needs --broker-name")
    options = {
        "min_brokers": args.brokers,
        "broker_name": args.broker_name,
        "broker_id": args.broker_id,
        "topic": args.topic,
    }
    try:
        if args.wait > 0:
            result = wait_ready(args.namesrv_addr, args.wait, **options)
        else:
            result = probe(args.namesrv_addr, timeout=args.timeout, **options)
    except (ProbeError, TimeoutError) as err:
        print(f"not ready: {err}", file=sys.stderr)
        return 1
    print(f"ready: {result.summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
