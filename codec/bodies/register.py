"""Broker registration bodies: ``RegisterBrokerBody``, ``TopicConfigSerializeWrapper``, ``DataVersion``.

The plain form is JSON. The compressed form (``RegisterBrokerBody.encode(true)``) is a zlib
stream of length-prefixed parts (all lengths big-endian int32)::

    DataVersion JSON | topic count N | N × TopicConfig text | filter-server list JSON |
    (brokers >= V5_0_0) mapping count M | M × TopicQueueMappingInfo JSON

where a TopicConfig text is ``name read write perm filterType [attributes JSON]`` separated by
single spaces (``TopicConfig.encode``).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

from codec import fastjson
from codec.bodies.base import JsonBody, jfield
from codec.errors import BodyError
from codec.versions import version_ordinal

PERM_PRIORITY = 0x1 << 3
PERM_READ = 0x1 << 2
PERM_WRITE = 0x1 << 1
PERM_INHERIT = 0x1 << 0

_V5_0_0 = version_ordinal("V5_0_0")
_MAX_INFLATED = 64 * 1024 * 1024  # refuse registration bodies that inflate beyond this


@dataclass(slots=True)
class DataVersion(JsonBody):
    """Bumped whenever a broker's topic set changes; compared field by field."""

    state_version: int = 0
    timestamp: int = 0
    counter: int = 0


@dataclass(slots=True)
class TopicConfig(JsonBody):
    topic_name: str = ""
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = jfield(factory=dict)

    def encode_text(self) -> str:
        """``TopicConfig.encode``: the space-separated form of the compressed registration."""
        text = (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
            f"{self.perm} {self.topic_filter_type} "
        )
        return text + (fastjson.dumps(self.attributes).decode() if self.attributes is not None else "")

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) < 5:
            raise BodyError(f"topic config text has {len(parts)} fields: {text!r}")
        try:
            config = cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4])
        except ValueError as err:
            raise BodyError(f"bad topic config text {text!r}") from err
        if len(parts) >= 6 and parts[5]:
            # Java ignores attributes it cannot parse (they may contain spaces); so do we.
            try:
                attributes = fastjson.loads(" ".join(parts[5:]))
                if isinstance(attributes, dict):
                    config.attributes = {str(k): str(v) for k, v in attributes.items()}
            except BodyError:
                pass
        return config


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """``TopicConfigAndMappingSerializeWrapper`` in 5.x (static-topic maps kept as parsed)."""

    topic_config_table: dict[str, TopicConfig] = jfield(factory=dict)
    data_version: DataVersion = jfield(factory=DataVersion)
    mapping_data_version: DataVersion | None = None
    topic_queue_mapping_info_map: dict[str, Any] | None = None
    topic_queue_mapping_detail_map: dict[str, Any] | None = None


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = jfield(factory=TopicConfigSerializeWrapper)
    filter_server_list: list[str] = jfield(factory=list)

    def encode_compressed(self) -> bytes:
        """The compressed form, as a 5.x broker with ``compressedRegister=true`` writes it."""
        wrapper = self.topic_config_serialize_wrapper
        parts = [_chunk(wrapper.data_version.encode()), _INT.pack(len(wrapper.topic_config_table))]
        parts += [_chunk(c.encode_text().encode()) for c in wrapper.topic_config_table.values()]
        parts.append(_chunk(fastjson.dumps(self.filter_server_list)))
        mappings = wrapper.topic_queue_mapping_info_map or {}
        parts.append(_INT.pack(len(mappings)))
        parts += [_chunk(fastjson.dumps(m)) for m in mappings.values()]
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode_compressed(cls, data: bytes, broker_version: int) -> RegisterBrokerBody:
        """Read the compressed form; ``broker_version`` is the request's version ordinal."""
        try:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(data, _MAX_INFLATED)
        except zlib.error as err:
            raise BodyError(f"compressed registration does not inflate: {err}") from err
        if inflater.unconsumed_tail:
            raise BodyError("compressed registration inflates beyond the limit")
        reader = _Reader(raw)
        wrapper = TopicConfigSerializeWrapper(data_version=DataVersion.decode(reader.chunk()))
        for _ in range(reader.count()):
            config = TopicConfig.decode_text(reader.chunk().decode("utf-8", "replace"))
            wrapper.topic_config_table[config.topic_name] = config
        filter_servers = fastjson.loads(reader.chunk())
        if broker_version >= _V5_0_0:
            mappings: dict[str, Any] = {}
            for _ in range(reader.count()):
                info = fastjson.loads(reader.chunk())
                if isinstance(info, dict):
                    mappings[str(info.get("topic"))] = info
            wrapper.topic_queue_mapping_info_map = mappings
        servers = [str(s) for s in filter_servers] if isinstance(filter_servers, list) else []
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=servers)


_INT = struct.Struct(">i")


def _chunk(data: bytes) -> bytes:
    return _INT.pack(len(data)) + data


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def count(self) -> int:
        if self.pos + 4 > len(self.data):
            raise BodyError("compressed registration truncated")
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        if value < 0:
            raise BodyError(f"negative length {value} in compressed registration")
        return int(value)

    def chunk(self) -> bytes:
        length = self.count()
        if self.pos + length > len(self.data):
            raise BodyError("compressed registration truncated")
        out = self.data[self.pos : self.pos + length]
        self.pos += length
        return out
