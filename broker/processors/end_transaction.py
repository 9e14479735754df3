"""END_TRANSACTION (37): the remoting door of the end-transaction service
(``EndTransactionProcessor``).

The header becomes an :class:`~broker.service.end_transaction.EndTransactionRequest`;
:class:`EndTransactionService` commits or rolls back (see :mod:`broker.service.end_transaction`).
SUCCESS when done; no answer at all when the producer left the transaction unknown, as in Java;
a refusal is answered with its code and remark by the dispatcher.
"""

from __future__ import annotations

from broker.controller import BrokerController
from broker.service.end_transaction import EndTransactionRequest, EndTransactionService
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.transaction import EndTransactionRequestHeader
from gateway.transport.dispatch import Dispatcher, RequestContext


class EndTransactionProcessor:
    def __init__(self, broker: BrokerController, service: EndTransactionService | None = None) -> None:
        self.broker = broker
        self.service = service if service is not None else EndTransactionService(broker)

    def register(self, dispatcher: Dispatcher) -> None:
        dispatcher.register(RequestCode.END_TRANSACTION, self.end_transaction, EndTransactionRequestHeader)

    async def end_transaction(
        self, ctx: RequestContext, request: RemotingCommand, header: EndTransactionRequestHeader
    ) -> RemotingCommand | None:
        end = EndTransactionRequest(
            producer_group=header.producer_group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=header.commit_or_rollback,
            from_transaction_check=bool(header.from_transaction_check),
            transaction_id=header.transaction_id,
            remote_addr=ctx.connection.remote_addr,
        )
        if not await self.service.end_transaction(end):
            return None
        return request.make_response(ResponseCode.SUCCESS)
