"""Send, pull, long polling, offsets, delay levels, locks and queries against an in-process broker,
through the wire protocol (our own client; the Java clients are in compat_tests/)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import trio

from codec.batch import BatchEntry, encode_batch
from codec.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, MessageQueue
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.frame import FrameDecoder
from codec.headers.pull import PullSysFlag
from codec.message_id import decode_offset_msg_id
from codec.properties import DELAY, KEYS, TAGS, UNIQ_KEY, decode_properties, encode_properties
from tests.broker.helpers import pull_request, records, running_broker, send_request


async def test_send_then_pull_returns_the_stored_record(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        props = {TAGS: "TagA", KEYS: "k1 键2", "color": "蓝"}
        resp = await conn.invoke(send_request("T1", "hello 你好".encode(), props), 3)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        fields = resp.ext_fields or {}
        assert fields["queueId"] == "0"
        assert fields["queueOffset"] == "0"
        assert fields["MSG_REGION"] == "DefaultRegion"
        assert fields["TRACE_ON"] == "true"
        host, port, offset = decode_offset_msg_id(fields["msgId"])
        assert (host, port, offset) == (b"\x7f\x00\x00\x01", app.server.port, 0)
        assert "T1" in app.controller.topics.table  # auto-created from TBW102

        pulled = await conn.invoke(pull_request("T1", 0), 3)
        assert pulled.code == ResponseCode.SUCCESS
        assert pulled.ext_fields is not None
        assert pulled.ext_fields["nextBeginOffset"] == "1"
        assert pulled.ext_fields["maxOffset"] == "1"
        [record] = records(pulled)
        stored = decode_properties(record.properties)
        assert record.body == "hello 你好".encode()
        assert {k: stored[k] for k in props} == props
        assert stored[UNIQ_KEY] == fields["transactionId"]
        assert stored["CLUSTER"] == "DefaultCluster"


async def test_send_errors_keep_ext_fields_and_name_the_problem(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        bad = await conn.invoke(send_request("bad topic!", b"x"), 3)
        assert bad.code == ResponseCode.INVALID_PARAMETER
        assert bad.ext_fields is not None
        assert "MSG_REGION" in bad.ext_fields
        system = await conn.invoke(send_request("SCHEDULE_TOPIC_XXXX", b"x"), 3)
        assert system.code == ResponseCode.NO_PERMISSION
        big = await conn.invoke(send_request("T2", b"x" * (4 * 1024 * 1024 + 1)), 5)
        assert big.code == ResponseCode.MESSAGE_ILLEGAL
        exactly = await conn.invoke(send_request("T2", b"y" * (4 * 1024 * 1024)), 5)
        assert exactly.code == ResponseCode.SUCCESS, exactly.remark
        queue = await conn.invoke(send_request("T2", b"x", queue_id=99), 3)
        assert queue.code == ResponseCode.INVALID_PARAMETER


async def test_batch_gets_consecutive_offsets_and_own_properties(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        entries = [BatchEntry(0, f"m{i}".encode(), encode_properties({TAGS: f"t{i}"})) for i in range(3)]
        resp = await conn.invoke(
            send_request("TB", encode_batch(entries), batch=True, code=RequestCode.SEND_BATCH_MESSAGE), 3
        )
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert resp.ext_fields is not None
        assert len(resp.ext_fields["msgId"].split(",")) == 3
        got = records(await conn.invoke(pull_request("TB", 0), 3))
        assert [(r.queue_offset, r.body, decode_properties(r.properties)[TAGS]) for r in got] == [
            (0, b"m0", "t0"),
            (1, b"m1", "t1"),
            (2, b"m2", "t2"),
        ]
        assert "transactionId" not in resp.ext_fields  # a 4.x batch: no batch-level UNIQ_KEY

        # A 5.x batch carries its own UNIQ_KEY: the real broker answers it as the transactionId.
        batch = encode_batch(entries)
        code = RequestCode.SEND_BATCH_MESSAGE
        request = send_request("TB", batch, {UNIQ_KEY: "BATCH-ID"}, batch=True, code=code)
        resp = await conn.invoke(request, 3)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        assert resp.ext_fields is not None
        assert resp.ext_fields["transactionId"] == "BATCH-ID"
        assert resp.ext_fields["queueOffset"] == "3"


async def test_pull_offset_corrections_and_tag_filter(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        missing = await conn.invoke(pull_request("NoSuchTopic", 0, flags=PullSysFlag.SUBSCRIPTION), 3)
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        for i in range(4):
            await conn.invoke(send_request("TF", b"%d" % i, {TAGS: "TagA" if i % 2 else "TagB"}), 3)
        flags = PullSysFlag.SUBSCRIPTION
        badly = await conn.invoke(pull_request("TF", 10, flags=flags), 3)
        assert badly.code == ResponseCode.PULL_OFFSET_MOVED
        assert badly.ext_fields is not None
        assert badly.ext_fields["nextBeginOffset"] == "4"
        at_end = await conn.invoke(pull_request("TF", 4, flags=flags), 3)
        assert at_end.code == ResponseCode.PULL_NOT_FOUND
        empty_queue = await conn.invoke(pull_request("TF", 0, queue_id=3, flags=flags), 3)
        assert empty_queue.code == ResponseCode.PULL_NOT_FOUND
        only_a = await conn.invoke(pull_request("TF", 0, subscription="TagA", flags=flags), 3)
        assert [r.body for r in records(only_a)] == [b"1", b"3"]


async def test_long_polling_answers_when_a_message_arrives(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        await conn.invoke(send_request("TL", b"first"), 3)
        answered: list[tuple[RemotingCommand, float]] = []

        async def held_pull() -> None:
            start = trio.current_time()
            resp = await conn.invoke(pull_request("TL", 1, subscription="TagX", suspend_ms=15000), 20)
            answered.append((resp, trio.current_time() - start))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(held_pull)
            with trio.fail_after(3):
                while app.controller.hold.held_count == 0:  # noqa: ASYNC110 - waiting for server state
                    await trio.sleep(0.01)
            await conn.invoke(send_request("TL", b"not matching", {TAGS: "TagY"}), 3)
            await trio.sleep(0.3)
            assert not answered  # a message the filter rejects does not wake the pull
            await conn.invoke(send_request("TL", b"second", {TAGS: "TagX"}), 3)
        resp, waited = answered[0]
        assert resp.code == ResponseCode.SUCCESS
        assert [r.body for r in records(resp)] == [b"second"]
        assert waited < 5

        start = trio.current_time()
        timeout = await conn.invoke(pull_request("TL", 3, suspend_ms=500), 5)
        assert timeout.code == ResponseCode.PULL_NOT_FOUND
        assert 0.4 < trio.current_time() - start < 3


async def test_consumer_offsets_persist_across_restart(tmp_path: Path) -> None:
    query = {"consumerGroup": "cg", "topic": "TO", "queueId": "0"}
    async with running_broker(tmp_path) as (_app, conn):
        none = await conn.invoke(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query), 3)
        assert none.code == ResponseCode.QUERY_NOT_FOUND
        await conn.invoke(send_request("TO", b"a"), 3)
        fresh = await conn.invoke(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query), 3)
        assert (fresh.code, (fresh.ext_fields or {}).get("offset")) == (ResponseCode.SUCCESS, "0")
        await conn.invoke(send_request("TO", b"b"), 3)
        unknown_group = await conn.invoke(
            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**query, "commitOffset": "2"}), 3
        )
        assert unknown_group.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST  # no auto-creation
        await conn.invoke(pull_request("TO", 0), 3)  # a pull does
        update = await conn.invoke(
            RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**query, "commitOffset": "2"}), 3
        )
        assert update.code == ResponseCode.SUCCESS
    assert (tmp_path / "store" / "config" / "consumerOffset.json").exists()
    async with running_broker(tmp_path) as (_app, conn):
        again = await conn.invoke(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, query), 3)
        assert (again.code, (again.ext_fields or {}).get("offset")) == (ResponseCode.SUCCESS, "2")
        max_offset = await conn.invoke(
            RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "TO", "queueId": "0"}), 3
        )
        assert (max_offset.ext_fields or {})["offset"] == "2"
        got = records(await conn.invoke(pull_request("TO", 0), 3))
        assert [r.body for r in got] == [b"a", b"b"]  # messages survive the restart too


async def test_first_commits_of_all_queues_at_once_all_stick(tmp_path: Path) -> None:
    """A push consumer's shutdown sends the first commits of all its queues back to back, oneway.
    The real 5.3.3 broker can lose one of them (apache/rocketmq#10700); every one must stick here."""
    async with running_broker(tmp_path) as (_app, conn):
        for queue_id in range(4):
            await conn.invoke(send_request("TQ", b"m", queue_id=queue_id), 3)
        await conn.invoke(pull_request("TQ", 0), 3)  # creates the group
        for queue_id in range(4):
            fields = {"consumerGroup": "cg", "topic": "TQ", "queueId": str(queue_id), "commitOffset": "1"}
            await conn.invoke_oneway(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields))
        committed: dict[int, str | None] = {}
        with trio.fail_after(3):
            while len(committed) < 4 or set(committed.values()) != {"1"}:
                for queue_id in range(4):
                    fields = {"consumerGroup": "cg", "topic": "TQ", "queueId": str(queue_id)}
                    resp = await conn.invoke(
                        RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, fields), 3
                    )
                    committed[queue_id] = (resp.ext_fields or {}).get("offset")
                await trio.sleep(0.01)


async def test_delay_level_delivers_no_earlier_than_due(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        sent_at = time.time()
        resp = await conn.invoke(send_request("TD", b"later", {DELAY: "1", TAGS: "x"}), 3)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        with trio.fail_after(10):
            while True:
                pulled = await conn.invoke(pull_request("TD", 0, flags=PullSysFlag.SUBSCRIPTION), 3)
                if pulled.code == ResponseCode.SUCCESS:
                    break
                await trio.sleep(0.05)
        [record] = records(pulled)
        assert record.body == b"later"
        assert record.store_timestamp / 1000 >= sent_at + 1.0 - 0.01
        assert decode_properties(record.properties)[DELAY] == "1"  # Java keeps the stored string


async def test_order_locks_and_query_by_key_and_id(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        mqs = [MessageQueue("TQ", "broker-a", 0), MessageQueue("TQ", "broker-a", 1)]

        async def lock(client: str) -> list[MessageQueue]:
            body = LockBatchRequestBody("cg", client, True, mqs).encode()
            resp = await conn.invoke(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, body=body), 3)
            return LockBatchResponseBody.decode(resp.body).lock_ok_mq_set

        assert await lock("c1") == mqs
        assert await lock("c2") == []
        assert await lock("c1") == mqs

        sent = await conn.invoke(send_request("TQ", b"findme", {KEYS: "order-42"}), 3)
        msg_id = (sent.ext_fields or {})["msgId"]
        query = {"topic": "TQ", "key": "order-42", "maxNum": "32", "beginTimestamp": "0"}
        query["endTimestamp"] = str(int(time.time() * 1000) + 1000)
        found = await conn.invoke(RemotingCommand.request(RequestCode.QUERY_MESSAGE, query), 3)
        assert found.code == ResponseCode.SUCCESS
        assert [r.body for r in records(found)] == [b"findme"]
        _host, _port, offset = decode_offset_msg_id(msg_id)
        view = await conn.invoke(
            RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)}), 3
        )
        assert [r.body for r in records(view)] == [b"findme"]
        assert app.controller.locks.holds_any("cg", app.controller.now_ms())


GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def golden_request(layout: str, code_name: str, key: str) -> RemotingCommand:
    """A request recorded from a real client whose properties or body mention ``key``."""
    for path in sorted((GOLDEN / "frames" / layout).glob(f"*-{code_name}-req.bin")):
        [cmd] = FrameDecoder().feed(path.read_bytes())
        if key in (cmd.ext_fields or {}).get("i", "") or key.encode() in cmd.body:
            return cmd
    raise LookupError(f"no {code_name} request mentioning {key} in {layout}")


def golden_properties(name: str) -> str:
    meta: dict[str, str] = json.loads((GOLDEN / "records" / f"{name}.json").read_text())
    return meta["properties"]


async def test_stored_properties_are_those_the_real_broker_writes(tmp_path: Path) -> None:
    """Replaying real clients' sends, our broker stores the very properties strings the real
    5.3.3 broker stored for them (Java HashMap order; batch-level properties appended)."""
    async with running_broker(tmp_path) as (_app, conn):
        for line in ("4.9.8", "5.3.3"):
            single = golden_request(f"{line}-JSON", "SEND_MESSAGE_V2", f"golden-chinese-{line}")
            batch = golden_request(f"{line}-JSON", "SEND_BATCH_MESSAGE", f"golden-batch0-{line}")
            for request in (single, batch):
                response = await conn.invoke(request, 5)
                assert response.code == ResponseCode.SUCCESS, response.remark
            topic_name = (single.ext_fields or {})["b"]
            stored: dict[str, str] = {}
            for queue_id in range(4):
                pulled = await conn.invoke(pull_request(topic_name, 0, queue_id=queue_id, flags=0x4), 3)
                for record in records(pulled):
                    stored[decode_properties(record.properties).get(KEYS, "")] = record.properties
            chinese = golden_properties(f"{line}-chinese")
            assert stored[decode_properties(chinese)[KEYS]] == chinese
            batch0 = golden_properties(f"{line}-batch-0")
            assert stored[decode_properties(batch0)[KEYS]] == batch0
