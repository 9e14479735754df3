"""The message properties string (``MessageDecoder.messageProperties2String`` and back).

Every property is ``name`` U+0001 ``value`` U+0002, the last one included. Names and values
cannot contain U+0001 or U+0002. Parsing follows Java's ``string2messageProperties`` exactly:
segments shorter than 3 characters, or whose separator is first or last, are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from codec.errors import MessageFormatError

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
MAX_PROPERTIES_BYTES = 32767  # stored as an int16 length

# Keys of org.apache.rocketmq.common.message.MessageConst used by the broker and store.
KEYS = "KEYS"
TAGS = "TAGS"
WAIT = "WAIT"
DELAY = "DELAY"
RETRY_TOPIC = "RETRY_TOPIC"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"
PGROUP = "PGROUP"
MIN_OFFSET = "MIN_OFFSET"
MAX_OFFSET = "MAX_OFFSET"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RECONSUME_TIME = "RECONSUME_TIME"
MSG_REGION = "MSG_REGION"
TRACE_ON = "TRACE_ON"
UNIQ_KEY = "UNIQ_KEY"
MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
CLUSTER = "CLUSTER"
POP_CK = "POP_CK"
TRANSACTION_ID = "__transactionId__"
CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
KEY_SEPARATOR = " "


def encode_properties(properties: Mapping[str, str | None]) -> str:
    """Join ``properties`` in their iteration order; ``None`` values are left out."""
    parts = []
    for name, value in properties.items():
        if value is None:
            continue
        if _has_separator(name) or _has_separator(value):
            raise MessageFormatError(f"property {name!r} contains a reserved separator character")
        parts.append(f"{name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}")
    return "".join(parts)


def decode_properties(text: str | None) -> dict[str, str]:
    """Split a properties string into a dict (later duplicates win, as in a Java map).

    Same result as Java's index walk (see the module docstring): a segment between property
    separators counts when it has at least 3 characters and a name-value separator that is
    neither its first nor its last character; the value keeps any further U+0001. ``split`` and
    ``partition`` do it in C, about three times faster than the walk (every send decodes one)."""
    props: dict[str, str] = {}
    if not text:
        return props
    for segment in text.split(PROPERTY_SEPARATOR):
        if len(segment) >= 3:
            name, sep, value = segment.partition(NAME_VALUE_SEPARATOR)
            if sep and name and value:
                props[name] = value
    return props


def split_keys(keys: str | None) -> list[str]:
    """The user keys of a ``KEYS`` property (space separated, empty entries dropped)."""
    return [k for k in (keys or "").split(KEY_SEPARATOR) if k]


def _has_separator(text: str) -> bool:
    return NAME_VALUE_SEPARATOR in text or PROPERTY_SEPARATOR in text
