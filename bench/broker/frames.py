"""The send requests the in-process benchmarks feed a broker (``bench.broker``, ``bench.auth``):
one header shape, the body size of the side-by-side cases, message ids as a client makes them."""

from __future__ import annotations

import time

from codec.headers.send import SendMessageRequestHeaderV2
from codec.message_id import UniqIdGenerator

BODY_SIZE = 1024  # bytes per message body, as the side-by-side cases
CLIENT_IDS = UniqIdGenerator(b"\x0a\x00\x00\x02")  # the "client's" ids (MessageClientIDSetter)


def send_header(i: int, properties: str, *, batch: bool) -> SendMessageRequestHeaderV2:
    return SendMessageRequestHeaderV2(
        producer_group="bench",
        topic="BenchTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=i % 4,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties,
        reconsume_times=0,
        unit_mode=False,
        batch=batch,
    )
