"""Microseconds per operation on the codec's per-request paths, and the JSON library choice.

Run ``python -m bench.codec [--quick]``. Measures, on frames shaped like the Java client's:

* decoding a SEND_MESSAGE_V2 request (JSON and binary headers) into a typed header;
* encoding a send response;
* encoding a pull response carrying 32 stored messages of 1 KiB;
* parsing and writing a typical JSON header with the stdlib ``json``, ``orjson`` and ``msgspec``.

Each figure is the best of several timed runs (``timeit``), in µs per operation.
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable

import msgspec
import orjson

from codec.codes import RequestCode, ResponseCode, SerializeType
from codec.command import RemotingCommand
from codec.frame import FrameDecoder, encode_frame
from codec.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from codec.message import MessageRecord, encode_record
from codec.properties import encode_properties

PROPS = encode_properties(
    {
        "KEYS": "order-10086",
        "TAGS": "TagA",
        "WAIT": "true",
        "UNIQ_KEY": "7F0000010A3C18B4AAC2604A3E5B0000",
        "color": "blue",
    }
)
SEND_HEADER = SendMessageRequestHeaderV2(
    producer_group="bench_producer_group",
    topic="BenchTopic",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=2,
    sys_flag=0,
    born_timestamp=1763800000000,
    flag=0,
    properties=PROPS,
    reconsume_times=0,
    unit_mode=False,
    max_reconsume_times=None,
    batch=False,
    broker_name="broker-a",
)


def send_frame(serialize: SerializeType) -> bytes:
    cmd = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, SEND_HEADER, opaque=123456, body=b"x" * 1024, serialize_type=serialize
    )
    return encode_frame(cmd)


def measure(fn: Callable[[], object], quick: bool) -> float:
    number = 2000 if quick else 20000
    timer = timeit.Timer(fn)
    return min(timer.repeat(repeat=3 if quick else 5, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (for smoke runs)")
    quick = parser.parse_args().quick
    rows: list[tuple[str, float]] = []

    for serialize in SerializeType:
        frame = send_frame(serialize)

        def decode_send(frame: bytes = frame) -> SendMessageRequestHeaderV2:
            (cmd,) = FrameDecoder().feed(frame)
            return cmd.header(SendMessageRequestHeaderV2)

        rows.append((f"decode SEND_MESSAGE_V2 request, {serialize.name} header", measure(decode_send, quick)))

    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, SEND_HEADER, opaque=7)
    response_header = SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000A1B2C3",
        queue_id=2,
        queue_offset=98765,
        transaction_id="7F0000010A3C18B4AAC2604A3E5B0000",
    )

    def encode_send_response() -> bytes:
        ext = response_header.to_ext_fields()
        ext["MSG_REGION"] = "DefaultRegion"
        ext["TRACE_ON"] = "true"
        return encode_frame(request.make_response(ResponseCode.SUCCESS, header=ext))

    rows.append(("encode send response (JSON)", measure(encode_send_response, quick)))

    records = [
        encode_record(
            MessageRecord(
                topic="BenchTopic",
                queue_id=2,
                body=b"y" * 1024,
                properties=PROPS,
                queue_offset=i,
                physical_offset=i * 1200,
                born_timestamp=1763800000000,
                store_timestamp=1763800000001,
                store_port=10911,
            )
        )
        for i in range(32)
    ]
    pull_request = RemotingCommand.request(RequestCode.PULL_MESSAGE, opaque=9)

    def encode_pull_response() -> bytes:
        header = {"suggestWhichBrokerId": "0", "nextBeginOffset": "32", "minOffset": "0", "maxOffset": "100"}
        return encode_frame(
            pull_request.make_response(ResponseCode.SUCCESS, header=header, body=b"".join(records))
        )

    rows.append(("encode pull response, 32 x 1 KiB messages", measure(encode_pull_response, quick)))

    header_json = send_frame(SerializeType.JSON)[8:-1024]
    header_obj = json.loads(header_json)
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    json_rows = [
        ("parse send header JSON: json (stdlib)", lambda: json.loads(header_json)),
        ("parse send header JSON: orjson", lambda: orjson.loads(header_json)),
        ("parse send header JSON: msgspec", lambda: decoder.decode(header_json)),
        (
            "write send header JSON: json (stdlib)",
            lambda: json.dumps(header_obj, separators=(",", ":")).encode(),
        ),
        ("write send header JSON: orjson", lambda: orjson.dumps(header_obj)),
        ("write send header JSON: msgspec", lambda: encoder.encode(header_obj)),
    ]
    rows += [(name, measure(fn, quick)) for name, fn in json_rows]

    width = max(len(name) for name, _ in rows)
    print(f"{'operation':<{width}}  µs/op")
    for name, micros in rows:
        print(f"{name:<{width}}  {micros:8.2f}")


if __name__ == "__main__":
    main()
