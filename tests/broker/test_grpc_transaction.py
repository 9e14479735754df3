"""Transactional messages over gRPC: EndTransaction, and the broker's check-back relayed on the
producer's Telemetry stream as a RecoverOrphanedTransactionCommand, answered with EndTransaction
(source SERVER_CHECK) as a 5.x client's TransactionChecker does."""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import trio

from codec.bodies.register import TopicConfig
from codec.properties import decode_properties
from gateway.launcher import start_grpc
from gateway.transport.grpc.config import GrpcServerConfig
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from tests.broker.helpers import pulled, running
from tests.broker.test_grpc_service import SERVICE, Client, in_thread, message, producer_settings

TOPIC = "TxTopic"


@asynccontextmanager
async def endpoint(root: Path, **fields: Any) -> AsyncIterator[tuple[Any, Any, int]]:
    async with running(root, **fields) as (app, conn), trio.open_nursery() as nursery:
        app.controller.topics.update(TopicConfig(TOPIC, 1, 1, 6, attributes={"message.type": "TRANSACTION"}))
        server = await start_grpc(nursery, app, GrpcServerConfig(grpc_server_port=0))
        yield app, conn, server.port
        await server.shutdown()
        nursery.cancel_scope.cancel()


def transactional(message_id: str) -> pb.SendMessageRequest:
    half = message(TOPIC, b"tx body", message_id)
    half.system_properties.message_type = pb.TRANSACTION
    return pb.SendMessageRequest(messages=[half])


def end(client: Client, entry: pb.SendResultEntry, resolution: int, source: int) -> pb.EndTransactionResponse:
    request = pb.EndTransactionRequest(
        topic=pb.Resource(name=TOPIC),
        message_id=entry.message_id,
        transaction_id=entry.transaction_id,
        resolution=resolution,  # type: ignore[arg-type]
        source=source,  # type: ignore[arg-type]
    )
    return client.call("EndTransaction", request, pb.EndTransactionResponse)


async def test_commit_delivers_and_rollback_drops(tmp_path: Path) -> None:
    async with endpoint(tmp_path) as (_app, conn, port):
        client = Client(port)

        def scenario() -> list[Any]:
            sent = [
                client.call("SendMessage", transactional(i), pb.SendMessageResponse) for i in ("TX1", "TX2")
            ]
            committed = end(client, sent[0].entries[0], pb.COMMIT, pb.SOURCE_CLIENT)
            rolled_back = end(client, sent[1].entries[0], pb.ROLLBACK, pb.SOURCE_CLIENT)
            again = end(client, sent[0].entries[0], pb.COMMIT, pb.SOURCE_CLIENT)
            return [sent, committed, rolled_back, again]

        sent, committed, rolled_back, again = await in_thread(scenario)
        delivered = await pulled(conn, TOPIC, queue_id=0)
    assert [s.entries[0].transaction_id for s in sent] == ["TX1", "TX2"]
    assert committed.status.code == rolled_back.status.code == pb.OK
    assert again.status.code == pb.INVALID_TRANSACTION_ID  # the data is gone with the first end
    assert [decode_properties(r.properties)["UNIQ_KEY"] for r in delivered] == ["TX1"]


def _await_check(port: int) -> tuple[pb.TelemetryCommand, pb.EndTransactionResponse]:
    """Keep a producer's Telemetry stream open until a check arrives; answer it with COMMIT."""
    client = Client(port, "checked-producer")
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        rpc = channel.stream_stream(
            SERVICE + "Telemetry",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.TelemetryCommand.FromString,
        )
        outbox: queue.Queue[pb.TelemetryCommand | None] = queue.Queue()

        def commands() -> Iterator[pb.TelemetryCommand]:
            while (item := outbox.get()) is not None:
                yield item

        answers = rpc(commands(), metadata=client.metadata, timeout=60)
        outbox.put(pb.TelemetryCommand(settings=producer_settings(TOPIC)))
        assert next(answers).HasField("settings")
        sent = client.call("SendMessage", transactional("TX-CHECKED"), pb.SendMessageResponse)
        assert sent.entries[0].status.code == pb.OK
        check: pb.TelemetryCommand = next(answers)
        command = check.recover_orphaned_transaction_command
        entry = pb.SendResultEntry(message_id=command.message.system_properties.message_id)
        entry.transaction_id = command.transaction_id
        ended = end(client, entry, pb.COMMIT, pb.SOURCE_SERVER_CHECK)
        outbox.put(None)
        answers.cancel()
        return check, ended


async def test_check_back_relayed_on_telemetry_and_answered(tmp_path: Path) -> None:
    fields = {"transaction_timeout": 500, "transaction_check_interval": 500}
    async with endpoint(tmp_path, **fields) as (_app, conn, port):
        check, ended = await in_thread(lambda: _await_check(port))
        with trio.fail_after(10):
            while not (delivered := await pulled(conn, TOPIC, queue_id=0)):  # noqa: ASYNC110 - polling the store
                await trio.sleep(0.1)
    command = check.recover_orphaned_transaction_command
    assert command.transaction_id == "TX-CHECKED"
    assert command.message.topic.name == TOPIC
    assert command.message.body == b"tx body"
    assert command.message.system_properties.message_type == pb.TRANSACTION
    assert command.message.user_properties["k"] == "v"
    assert ended.status.code == pb.OK
    assert [decode_properties(r.properties)["UNIQ_KEY"] for r in delivered] == ["TX-CHECKED"]
