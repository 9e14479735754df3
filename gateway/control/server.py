"""A tiny HTTP/1.1 server for the control endpoint, on Trio directly.

One request per connection (every reply says ``Connection: close``): the request line, headers
up to ``MAX_HEAD_BYTES``, a body of ``Content-Length`` bytes up to ``MAX_BODY_BYTES``; a chunked
body is refused. Every reply is JSON. What a client gets wrong gets a 4xx with
``{"error": ...}`` (400 malformed, 408 too slow, 411 no length, 413 too large, 431 head too
large, 501 chunked); a bug in a route gets a 500 and one ERROR log line with the traceback, and
the client only the error's name. Routes live in :class:`gateway.control.api.ControlApi`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from http import HTTPStatus

import trio

from gateway.control.api import ControlApi, Reply
from gateway.transport.address import join_address

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024  # request line and headers
MAX_BODY_BYTES = 64 * 1024  # a fault rule is a few hundred bytes
READ_TIMEOUT_S = 10.0  # for the whole request
MAX_CONNECTIONS = 64  # served at once; more wait in the listen backlog
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class ControlConfig:
    """Where the control endpoint listens (``--control-port``; 0: any free port)."""

    host: str = "127.0.0.1"
    port: int = 0


class RequestError(Exception):
    """A request we answer with ``status`` and this message, without reaching a route."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    """Serves :class:`ControlApi` on ``listeners``; :attr:`address` is ``host:port`` once bound."""

    def __init__(self, api: ControlApi, listeners: list[trio.SocketListener], host: str) -> None:
        self.api = api
        self.listeners = listeners
        port = int(listeners[0].socket.getsockname()[1])
        self.address = join_address(host, port)
        self._limit = trio.CapacityLimiter(MAX_CONNECTIONS)
        self.requests = 0

    @classmethod
    async def bind(cls, api: ControlApi, config: ControlConfig) -> ControlServer:
        """Bind ``config``'s address; raises OSError when it cannot."""
        return cls(api, await trio.open_tcp_listeners(config.port, host=config.host), config.host)

    async def run(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; reports :attr:`address` once accepting."""
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._serve, self.listeners)
            logger.info("control endpoint listening on http://%s", self.address)
            task_status.started(self.address)

    async def _serve(self, stream: trio.SocketStream) -> None:
        async with self._limit, stream:
            try:
                with trio.fail_after(READ_TIMEOUT_S):
                    method, target, body = await read_request(stream)
                reply = self._reply(method, target, body)
            except RequestError as err:
                method, reply = "GET", Reply(err.status, {"error": str(err)})
            except trio.TooSlowError:
                method, reply = (
                    "GET",
                    Reply(408, {"error": f"request not complete within {READ_TIMEOUT_S:g} s"}),
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            self.requests += 1
            try:
                with trio.move_on_after(READ_TIMEOUT_S):
                    await stream.send_all(encode_reply(reply, head_only=method == "HEAD"))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return

    def _reply(self, method: str, target: str, body: bytes) -> Reply:
        try:
            return self.api.handle(method, target, body)
        except Exception as err:  # a bug in a route: the client gets a 500, the log the traceback
            logger.error("control endpoint: %s %s failed", method, target, exc_info=err)
            return Reply(500, {"error": f"internal error: {type(err).__name__}"})

    def statistics(self) -> dict[str, object]:
        return {"address": self.address, "requests": self.requests}


async def read_request(stream: trio.abc.ReceiveStream) -> tuple[str, str, bytes]:
    """``(method, target, body)`` of one request; raises :class:`RequestError` for a bad one and
    OSError-like Trio errors when the stream breaks."""
    buffer = bytearray()
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD_BYTES:
            raise RequestError(431, f"request head over {MAX_HEAD_BYTES} bytes")
        data = await stream.receive_some(16 * 1024)
        if not data:
            raise RequestError(400, "connection closed before the request head ended")
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    if len(head) > MAX_HEAD_BYTES:
        raise RequestError(431, f"request head over {MAX_HEAD_BYTES} bytes")
    method, target, headers = parse_head(head)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise RequestError(501, "chunked request bodies are not supported: send Content-Length")
    length_text = headers.get("content-length")
    if length_text is None:
        if method in ("POST", "PUT", "PATCH"):
            raise RequestError(411, "Content-Length required")
        return method, target, b""
    if not length_text.isdigit():
        raise RequestError(400, f"bad Content-Length {length_text!r}")
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        raise RequestError(413, f"body of {length} bytes is over the limit of {MAX_BODY_BYTES}")
    body = bytearray(rest[:length])
    while len(body) < length:
        data = await stream.receive_some(length - len(body))
        if not data:
            raise RequestError(400, f"connection closed after {len(body)} of {length} body bytes")
        body += data
    return method, target, bytes(body)


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """The method, target and headers (lower-case names) of a request head; raises
    :class:`RequestError` for a malformed one."""
    try:
        text = head.decode("iso-8859-1")
    except UnicodeDecodeError as err:  # pragma: no cover - latin-1 decodes every byte
        raise RequestError(400, "request head is not text") from err
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
        raise RequestError(400, f"malformed request line {lines[0][:100]!r}")
    method = parts[0]
    if method not in _METHODS:
        raise RequestError(400, f"unknown method {method[:20]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise RequestError(400, f"malformed header line {line[:100]!r}")
        headers[name.lower()] = value.strip()
    return method, parts[1], headers


def encode_reply(reply: Reply, *, head_only: bool = False) -> bytes:
    """The bytes of a reply: status line, JSON content headers, ``Connection: close``."""
    body = b"" if reply.body is None else json.dumps(reply.body, ensure_ascii=False).encode("utf-8")
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Unknown"
    head = [f"HTTP/1.1 {reply.status} {reason}", "Connection: close", f"Content-Length: {len(body)}"]
    if body:
        head.append("Content-Type: application/json; charset=utf-8")
    data = ("\r\n".join(head) + "\r\n\r\n").encode("ascii")
    return data if head_only else data + body
