"""The broker's view of a 5.x producer: the remoting side of the one call the broker makes to it.

The broker reaches a producer through the ``Peer`` interface of its connection
(:class:`gateway.transport.dispatch.Peer`), with remoting commands: for a producer, only the
transaction check-back CHECK_TRANSACTION_STATE (``Broker2Client.checkProducerTransactionState``).
A 5.x client has no remoting connection; :class:`TelemetryPeer` takes the command, decodes it once
into a typed :class:`TransactionCheck` and hands that on (to the Telemetry stream, as a
RecoverOrphanedTransactionCommand: :meth:`broker.grpc.transaction.TransactionActivity.relay_check`).
So the modules that speak protobuf never see a remoting command; this one never sees protobuf.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from codec.codes import RequestCode
from codec.command import RemotingCommand
from codec.errors import CodecError
from codec.headers.transaction import CheckTransactionStateRequestHeader
from codec.message import MessageRecord, decode_record

logger = logging.getLogger(__name__)


class TransactionCheck:
    """A check-back, typed: the half message and where it is (its queue offset and commit-log
    offset, which the producer's end names); ``transaction_id`` None when the broker sent none."""

    __slots__ = ("commit_log_offset", "record", "tran_state_table_offset", "transaction_id")

    def __init__(
        self,
        record: MessageRecord,
        transaction_id: str | None,
        tran_state_table_offset: int,
        commit_log_offset: int,
    ) -> None:
        self.record = record
        self.transaction_id = transaction_id
        self.tran_state_table_offset = tran_state_table_offset
        self.commit_log_offset = commit_log_offset


class TelemetryPeer:
    """A 5.x producer as a ``Peer``: a transaction check goes to ``relay``; ``is_open`` says
    whether the client's Telemetry stream is still there."""

    def __init__(
        self, client_id: str, relay: Callable[[TransactionCheck], bool], is_open: Callable[[], bool]
    ) -> None:
        self.client_id = client_id
        self._relay = relay
        self._open = is_open

    @property
    def closed(self) -> bool:
        """Closed once the client's Telemetry session is gone."""
        return not self._open()

    @property
    def writable(self) -> bool:
        return self._open()

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        raise CodecError("a gRPC client answers no remoting request")

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        self.try_invoke_oneway(request)

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        """Relay a CHECK_TRANSACTION_STATE; False for any other request, a closed stream or a
        command that does not decode (logged)."""
        if request.code != RequestCode.CHECK_TRANSACTION_STATE or not self._open():
            return False
        try:
            header = request.header(CheckTransactionStateRequestHeader)
            record = decode_record(bytes(request.body))
        except CodecError as err:
            logger.error("transaction check for %s not relayed: %s", self.client_id, err)
            return False
        check = TransactionCheck(
            record, header.transaction_id, header.tran_state_table_offset, header.commit_log_offset
        )
        return self._relay(check)

    def close(self) -> None:
        """A gRPC client's stream ends with its connection; nothing to close here."""
