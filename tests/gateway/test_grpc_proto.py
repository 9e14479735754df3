"""Our apache.rocketmq.v2 definitions against the classes a published client was generated with.

rocketmq-python-client 5.1.2 ships protoc output of apache/rocketmq-apis (a version after our
v2.0.4). Every message, field (number, type, label, message or enum type), enum value and RPC of
ours must be there with the same wire meaning; the published side may only have more. The
published classes are read in a separate interpreter: both sets register the same full names in
protobuf's default pool, which refuses duplicates.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from google.protobuf.descriptor import Descriptor, FileDescriptor

from gateway.transport.grpc.proto import rocketmq_v2_pb2

_DUMP = """
import json
from google.protobuf import descriptor_pool
from rocketmq.grpc_protocol import definition_pb2, service_pb2

def fields(d):
    return {f.name: [f.number, f.type, f.is_repeated,
                     f.message_type.full_name if f.message_type else "",
                     f.enum_type.full_name if f.enum_type else ""] for f in d.fields}

out = {"messages": {}, "enums": {}, "methods": {}}
for module in (definition_pb2, service_pb2):
    for name, d in module.DESCRIPTOR.message_types_by_name.items():
        out["messages"][name] = fields(d)
        for nested in d.nested_types:
            out["messages"][name + "." + nested.name] = fields(nested)
    for name, e in module.DESCRIPTOR.enum_types_by_name.items():
        out["enums"][name] = {v.name: v.number for v in e.values}
service = service_pb2.DESCRIPTOR.services_by_name["MessagingService"]
for m in service.methods:
    out["methods"][m.name] = [m.input_type.full_name, m.output_type.full_name,
                              m.client_streaming, m.server_streaming]
print(json.dumps(out))
"""


def _fields(descriptor: Descriptor) -> dict[str, list[Any]]:
    return {
        f.name: [
            f.number,
            f.type,
            f.is_repeated,
            f.message_type.full_name if f.message_type else "",
            f.enum_type.full_name if f.enum_type else "",
        ]
        for f in descriptor.fields
    }


def test_our_definitions_match_the_published_ones() -> None:
    published = json.loads(
        subprocess.run([sys.executable, "-c", _DUMP], capture_output=True, text=True, check=True).stdout
    )
    ours: FileDescriptor = rocketmq_v2_pb2.DESCRIPTOR
    checked = 0
    for name, descriptor in ours.message_types_by_name.items():
        theirs = published["messages"][name]
        for field_name, spec in _fields(descriptor).items():
            assert theirs[field_name] == spec, f"{name}.{field_name}"
            checked += 1
        for nested in descriptor.nested_types:  # map entries (Message.UserPropertiesEntry)
            assert published["messages"][f"{name}.{nested.name}"] == _fields(nested)
    for name, enum in ours.enum_types_by_name.items():
        theirs_enum = published["enums"][name]
        for value in enum.values:
            assert theirs_enum[value.name] == value.number, f"{name}.{value.name}"
    service = ours.services_by_name["MessagingService"]
    for method in service.methods:
        spec = [method.input_type.full_name, method.output_type.full_name]
        spec += [method.client_streaming, method.server_streaming]
        assert published["methods"][method.name] == spec, method.name
    # 2.0.4's 60 messages and 184 fields, plus the lite ones (5 messages, 22 fields) of 5.5.
    assert len(ours.message_types_by_name) == 65
    assert checked == 206  # every field of ours was compared
