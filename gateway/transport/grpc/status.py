"""gRPC status codes and the error an RPC handler raises to end its call with one.

The codes are those of grpc's ``doc/statuscodes.md`` (io.grpc.Status.Code in Java); the server
puts the code and the percent-encoded message in the ``grpc-status``/``grpc-message`` trailers.
"""

from __future__ import annotations

from enum import IntEnum


class StatusCode(IntEnum):
    """Mirrors io.grpc.Status.Code."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class GrpcError(Exception):
    """Ends the call with ``code`` and ``message`` (raised by handlers and by the framing)."""

    def __init__(self, code: StatusCode, message: str = "") -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
