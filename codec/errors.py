"""The project's error hierarchy.

Every error carries the RocketMQ response code it maps to as the class attribute ``response_code``
(as h2's exceptions carry ``error_code``), so the dispatcher can turn any domain error into a
response without a table of its own. The codes are plain ints here to keep this module free of
imports; they are the values of :class:`codec.codes.ResponseCode`.
"""

from __future__ import annotations

_SYSTEM_ERROR = 1  # ResponseCode.SYSTEM_ERROR


class RocketMQError(Exception):
    """Root of every error raised by this project.

    ``response_code`` is the class's code unless an instance is given its own (a processor that
    rejects a request with one of several codes); ``ext_fields`` are response header fields the
    answer must carry even though it is an error (e.g. ``forbiddenType`` of a refused pull).
    ``remark`` is what the answer's remark says: the message, or ``None`` with ``null_remark``
    where Java answers with a null remark (no ``remark`` key in the header at all).
    """

    response_code: int = _SYSTEM_ERROR

    def __init__(
        self,
        message: str = "",
        *,
        response_code: int | None = None,
        ext_fields: dict[str, str] | None = None,
        null_remark: bool = False,
    ) -> None:
        super().__init__(message)
        if response_code is not None:
            self.response_code = response_code
        self.ext_fields = ext_fields
        self.null_remark = null_remark

    @property
    def remark(self) -> str | None:
        return None if self.null_remark else str(self)


class CodecError(RocketMQError):
    """Bytes that cannot be decoded (or a value that cannot be encoded)."""


class FrameError(CodecError):
    """A remoting frame is malformed; the connection that sent it cannot be trusted any more."""


class FrameTooLargeError(FrameError):
    """A frame's length prefix exceeds the configured frame limit."""


class HeaderError(CodecError):
    """A custom header field is missing or malformed."""


class BodyError(CodecError):
    """A request or response body is malformed."""


class MessageFormatError(CodecError):
    """A stored message record, properties string or batch body is malformed."""
