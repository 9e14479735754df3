"""The one value type of the remoting protocol: a request or a response.

Mirrors ``org.apache.rocketmq.remoting.protocol.RemotingCommand``. Headers are kept as the
string map ``ext_fields`` exactly as they travel; typed views of it live in :mod:`codec.headers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, TypeVar

from codec.codes import LanguageCode, SerializeType
from codec.versions import CURRENT_VERSION

if TYPE_CHECKING:
    from codec.headers import CustomHeader

_H = TypeVar("_H", bound="CustomHeader")

RPC_TYPE_RESPONSE = 0x1  # flag bit 0: the command is a response
RPC_ONEWAY = 0x2  # flag bit 1: the request expects no answer


#: The fields of :class:`RemotingCommand` (its ``__slots__``; compiled classes have no ``__slots__`` to read).
COMMAND_FIELDS: Final = (
    "body",
    "code",
    "ext_fields",
    "flag",
    "language",
    "opaque",
    "remark",
    "serialize_type",
    "version",
)


class RemotingCommand:
    """A decoded frame.

    ``language`` and ``version`` are plain ints so that values newer than our tables survive a
    round trip; ``ext_fields`` is ``None`` when the sender had no custom header (JSON: no
    ``extFields`` key), which Java distinguishes from an empty map. ``body`` is ``b""`` when the
    frame has no body.
    """

    __slots__ = COMMAND_FIELDS

    def __init__(
        self,
        code: int,
        *,
        language: int = LanguageCode.JAVA,
        version: int = CURRENT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        self.ext_fields = ext_fields
        self.body = body
        self.serialize_type = serialize_type

    @classmethod
    def request(
        cls,
        code: int,
        header: CustomHeader | Mapping[str, str] | None = None,
        *,
        opaque: int = 0,
        body: bytes = b"",
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """Build a request (what the broker sends to clients and the NameServer)."""
        return cls(
            code,
            opaque=opaque,
            flag=RPC_ONEWAY if oneway else 0,
            ext_fields=_ext(header),
            body=body,
            serialize_type=serialize_type,
        )

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    def make_response(
        self,
        code: int,
        remark: str | None = None,
        header: CustomHeader | Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        """Build the response to this request.

        As ``NettyRemotingAbstract`` does: same ``opaque``, the response flag, our own version.
        The response mirrors the request's serialize type; Java clients accept either.
        """
        return RemotingCommand(
            code,
            opaque=self.opaque,
            flag=RPC_TYPE_RESPONSE,
            remark=remark,
            ext_fields=_ext(header),
            body=body,
            serialize_type=self.serialize_type,
        )

    def header(self, header_type: type[_H]) -> _H:
        """Decode ``ext_fields`` into a typed header; raises :class:`codec.errors.HeaderError`."""
        return header_type.from_ext_fields(self.ext_fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in COMMAND_FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable value type

    def __repr__(self) -> str:
        fields = ", ".join(f"{s}={getattr(self, s)!r}" for s in COMMAND_FIELDS if s != "body")
        return f"RemotingCommand({fields}, body=<{len(self.body)} bytes>)"


def _ext(header: CustomHeader | Mapping[str, str] | None) -> dict[str, str] | None:
    if header is None:
        return None
    if isinstance(header, Mapping):
        return dict(header)
    return header.to_ext_fields()
