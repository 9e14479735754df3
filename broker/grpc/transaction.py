"""EndTransaction and the transaction check-backs relayed to 5.x clients.

Mirrors the Proxy's ``EndTransactionActivity``, ``TransactionProcessor`` and its
``TransactionService`` (the transaction data kept per producer group and transaction id: the half
message's queue offset and commit-log offset, from the send or from a check), and, for the
check-backs, the ``GrpcClientChannel`` of a producer: the broker's CHECK_TRANSACTION_STATE to the
producer group becomes a RecoverOrphanedTransactionCommand on the client's Telemetry stream. A
5.x client's producer group is its topic (the Proxy's choice), under which ClientActivity
registers it. The end itself goes to the same typed end-transaction service as a remoting
END_TRANSACTION (:mod:`broker.service.end_transaction`): OK when the broker resolved it or the
client left it unknown; a refusal becomes the response's status.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass

from broker.controller import BrokerController
from broker.grpc.common import OK, Call, ClientContext, StatusError
from broker.grpc.convert import to_message
from broker.grpc.peer import TelemetryPeer, TransactionCheck
from broker.grpc.route import check_topic
from broker.service.end_transaction import EndTransactionRequest, EndTransactionService
from codec.headers.transaction import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from codec.properties import PGROUP, UNIQ_KEY, decode_properties
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

logger = logging.getLogger(__name__)

MAX_TRANSACTION_DATA = 100_000  # entries kept (oldest dropped first): ends that never come
_RESOLUTIONS = {pb.COMMIT: TRANSACTION_COMMIT_TYPE, pb.ROLLBACK: TRANSACTION_ROLLBACK_TYPE}


@dataclass(frozen=True, slots=True)
class TransactionData:
    tran_state_table_offset: int  # the half message's offset in its queue
    commit_log_offset: int


class TransactionActivity:
    """See the module docstring; ``sessions`` are ClientActivity's Telemetry streams by client id."""

    def __init__(
        self, broker: BrokerController, sessions: dict[str, Call], ends: EndTransactionService | None = None
    ) -> None:
        """``ends``: the broker's end-transaction service (default: one of its own)."""
        self.broker = broker
        self.sessions = sessions
        self.ends = ends if ends is not None else EndTransactionService(broker)
        self.data: collections.OrderedDict[tuple[str, str], TransactionData] = collections.OrderedDict()
        self.relayed = 0

    def remember(self, group: str, transaction_id: str, data: TransactionData) -> None:
        self.data[(group, transaction_id)] = data
        self.data.move_to_end((group, transaction_id))
        while len(self.data) > MAX_TRANSACTION_DATA:
            self.data.popitem(last=False)

    async def end_transaction(
        self, ctx: ClientContext, request: pb.EndTransactionRequest
    ) -> pb.EndTransactionResponse:
        topic = check_topic(request.topic, self.broker.topics)
        if not request.transaction_id.strip():
            raise StatusError(pb.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        data = self.data.pop((topic, request.transaction_id), None)
        if data is None:
            raise StatusError(pb.INVALID_TRANSACTION_ID, "cannot found transaction data")
        end = EndTransactionRequest(
            producer_group=topic,
            tran_state_table_offset=data.tran_state_table_offset,
            commit_log_offset=data.commit_log_offset,
            commit_or_rollback=_RESOLUTIONS.get(request.resolution, TRANSACTION_NOT_TYPE),
            from_transaction_check=request.source == pb.SOURCE_SERVER_CHECK,
            transaction_id=request.transaction_id,
            remote_addr=ctx.remote_addr,
        )
        await self.ends.end_transaction(end)
        return pb.EndTransactionResponse(status=OK)

    def peer_for(self, client_id: str) -> TelemetryPeer:
        return TelemetryPeer(
            client_id, lambda check: self.relay_check(client_id, check), lambda: client_id in self.sessions
        )

    def relay_check(self, client_id: str, check: TransactionCheck) -> bool:
        """A transaction check-back to the client as a RecoverOrphanedTransactionCommand."""
        session = self.sessions.get(client_id)
        if session is None:
            return False
        record = check.record
        props = decode_properties(record.properties)
        transaction_id = check.transaction_id or props.get(UNIQ_KEY, "")
        self.remember(
            props.get(PGROUP, record.topic),
            transaction_id,
            TransactionData(check.tran_state_table_offset, check.commit_log_offset),
        )
        command = pb.TelemetryCommand(
            recover_orphaned_transaction_command=pb.RecoverOrphanedTransactionCommand(
                message=to_message(record, props), transaction_id=transaction_id
            )
        )
        posted = session.post(command.SerializeToString())
        self.relayed += posted
        return posted
