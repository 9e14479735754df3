"""The recall handle of a delayed message (``RecallMessageHandle.HandleV1``).

A send whose message goes through the timer answers a handle naming the message's real topic, the
broker, its delivery slot and its unique key: ``v1 <topic> <brokerName> <timestamp> <messageId>``
joined by spaces, in URL-safe base64 with padding (``Base64.getUrlEncoder``). RECALL_MESSAGE (and
the gRPC RecallMessage) hands it back to cancel the delivery.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from codec.errors import CodecError

VERSION_1 = "v1"
INVALID = "recall handle is invalid"  # DecoderException's message, answered as the remark


@dataclass(frozen=True, slots=True)
class RecallHandle:
    topic: str
    broker_name: str
    timestamp: str  # as written: the broker parses it, and an unparsable one is refused there
    message_id: str

    def encode(self) -> str:
        raw = " ".join((VERSION_1, self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    @classmethod
    def decode(cls, handle: str | None) -> RecallHandle:
        """Raises :class:`CodecError` with Java's message for an empty, non-base64 or short handle."""
        if not handle:
            raise CodecError(INVALID)
        try:
            raw = base64.b64decode(_padded(handle), altchars=b"-_", validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise CodecError(INVALID) from None
        items = raw.split(" ")
        while items and not items[-1]:  # String.split drops trailing empty strings
            items.pop()
        if not items or items[0] != VERSION_1 or len(items) < 5:
            raise CodecError(INVALID)
        return cls(items[1], items[2], items[3], items[4])


def _padded(text: str) -> bytes:
    """Java's URL decoder accepts the handle with or without its ``=`` padding."""
    data = text.encode("ascii", "replace")
    if b"=" not in data:
        data += b"=" * (-len(data) % 4)
    return data
