"""Which requests the gRPC server refuses before any handler runs, and how; no I/O.

Mirrors io.grpc.netty.NettyServerHandler.onHeadersRead, io.grpc.internal.ServerImpl (the
``grpc-encoding`` check) and Netty's header-list limit, in their order, as observed on the real
Proxy (its grpc-java 1.53 server):

* a header list over ``MAX_HEADER_LIST_SIZE`` (grpc-java's default 8 KiB, advertised as
  SETTINGS_MAX_HEADER_LIST_SIZE) gets HTTP 431; one over ``HEADER_LIST_GOAWAY_SIZE`` (a quarter
  more, Netty's threshold) ends the connection (the HTTP/2 library's HPACK limit, GOAWAY);
* no ``:path``, or one without a leading ``/``: HTTP 404, UNIMPLEMENTED;
* no ``content-type``, or one that is not ``application/grpc[+proto|;...]``: HTTP 415, INTERNAL;
* a method other than POST: HTTP 405, INTERNAL;
* a ``grpc-encoding`` other than ``identity`` and ``gzip``: HTTP 200, UNIMPLEMENTED "Can't find
  decompressor for X" (with ``grpc-accept-encoding``, as grpc's PROTOCOL-HTTP2.md asks).

``te`` other than ``trailers`` is served, as grpc-java serves it (it only warns once); so the
HTTP/2 library's own header validation, which ends the connection for it, is off, and
:func:`malformed` keeps the checks of RFC 9113 8.2.2/8.3 that Netty makes (a connection-specific
header, an unknown or duplicated pseudo-header): that stream alone is reset with PROTOCOL_ERROR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gateway.transport.grpc.framing import encode_grpc_message
from gateway.transport.grpc.status import GrpcError, StatusCode

MAX_HEADER_LIST_SIZE = 8192  # GrpcUtil.DEFAULT_MAX_HEADER_LIST_SIZE
HEADER_LIST_GOAWAY_SIZE = MAX_HEADER_LIST_SIZE + MAX_HEADER_LIST_SIZE // 4
HEADER_ENTRY_OVERHEAD = 32  # RFC 7541 4.1: a header's size is name + value + 32
#: Request encodings decompressed (grpc-java's default DecompressorRegistry: identity and gzip).
ACCEPT_ENCODING = "gzip"
ENCODINGS = frozenset({"identity", "gzip"})
#: What a response's headers carry (ServerCallImpl.sendHeaders: responses are not compressed).
RESPONSE_HEADERS = [
    (":status", "200"),
    ("content-type", "application/grpc"),
    ("grpc-encoding", "identity"),
    ("grpc-accept-encoding", ACCEPT_ENCODING),
]


@dataclass(frozen=True, slots=True)
class HttpRefusal:
    """An HTTP error answer instead of a call (NettyServerHandler.respondWithHttpError): the
    status line, the gRPC status in the same HEADERS, and the message as a text body."""

    http_status: int
    code: StatusCode
    message: str

    def headers(self) -> list[tuple[str, str]]:
        return [
            (":status", str(self.http_status)),
            ("content-type", "text/plain; charset=utf-8"),
            ("grpc-status", str(int(self.code))),
            ("grpc-message", encode_grpc_message(self.message)),
        ]

    @property
    def body(self) -> bytes:
        return self.message.encode()


CONNECTION_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}
)
REQUEST_PSEUDO_HEADERS = frozenset({":method", ":scheme", ":path", ":authority"})


def malformed(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why a request's header block is malformed (its stream is reset), or None."""
    seen: set[str] = set()
    for name, _ in headers:
        if name.startswith(":"):
            if name not in REQUEST_PSEUDO_HEADERS or name in seen:
                return f"pseudo-header {name} not allowed here"
            seen.add(name)
        elif name in CONNECTION_HEADERS:
            return f"connection-specific header {name}"
        elif name != name.lower():
            return f"header name {name} not lower-case"
    return None


def header_list_size(headers: Iterable[tuple[str, str]]) -> int:
    """The size SETTINGS_MAX_HEADER_LIST_SIZE bounds (RFC 9113 6.5.2), in characters."""
    return sum(len(name) + len(value) + HEADER_ENTRY_OVERHEAD for name, value in headers)


def is_grpc_content_type(value: str) -> bool:
    """Mirrors io.grpc.internal.GrpcUtil.isGrpcContentType."""
    value = value.lower()
    if not value.startswith("application/grpc"):
        return False
    return len(value) == len("application/grpc") or value[len("application/grpc")] in "+;"


def refusal(pseudo: Mapping[str, str], metadata: Mapping[str, str], size: int) -> HttpRefusal | None:
    """The HTTP error a request's headers get, or None when it may become a call."""
    if size > MAX_HEADER_LIST_SIZE:
        return HttpRefusal(
            431, StatusCode.RESOURCE_EXHAUSTED, f"Header list of {size} bytes exceeds {MAX_HEADER_LIST_SIZE}"
        )
    path = pseudo.get(":path")
    if not path:
        return HttpRefusal(404, StatusCode.UNIMPLEMENTED, "Expected path but is missing")
    if not path.startswith("/"):
        return HttpRefusal(404, StatusCode.UNIMPLEMENTED, f"Expected path to start with /: {path}")
    content_type = metadata.get("content-type")
    if content_type is None:
        return HttpRefusal(415, StatusCode.INTERNAL, "Content-Type is missing from the request")
    if not is_grpc_content_type(content_type):
        return HttpRefusal(415, StatusCode.INTERNAL, f"Content-Type '{content_type}' is not supported")
    method = pseudo.get(":method")
    if method != "POST":
        return HttpRefusal(405, StatusCode.INTERNAL, f"Method '{method}' is not supported")
    return None


def message_encoding(metadata: Mapping[str, str]) -> str:
    """The request's ``grpc-encoding``; GrpcError UNIMPLEMENTED for one not decompressed here
    (ServerImpl: "Can't find decompressor for X")."""
    encoding = metadata.get("grpc-encoding", "identity")
    if encoding not in ENCODINGS:
        raise GrpcError(StatusCode.UNIMPLEMENTED, f"Can't find decompressor for {encoding}")
    return encoding
