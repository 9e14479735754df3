"""The broker's VIP ("fast") channel: the request codes it answers, and its dispatcher.

``BrokerController.initializeRemotingServer`` (5.3.3) opens a second ``NettyRemotingServer`` at
``listenPort - 2`` (0 when negative), and ``registerProcessor`` gives it the same processors as the
main server except those that hold a request waiting for messages: pull, lite pull, peek, pop,
notification and polling info. Clients with ``vipChannelEnabled`` (``MixAll.brokerVIPChannel``)
and rocketmq-dashboard send their broker-bound calls there. On the fast server an unregistered
code falls through to ``AdminBrokerProcessor``'s default, ``REQUEST_CODE_NOT_SUPPORTED`` with
" request type N not supported", which is what :class:`VipDispatcher` answers for those codes,
after the ACL guard (the fast server runs the same request pipeline before any processor).

The VIP dispatcher hands every other request to the main dispatcher, so both ports share one set
of processors, one ACL guard and one set of request statistics.
"""

from __future__ import annotations

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from gateway.transport.dispatch import Dispatcher, HandlerResult, RequestContext, Waiting

#: The codes ``registerProcessor`` registers on the main server only.
NOT_ON_VIP_CHANNEL = frozenset(
    {
        RequestCode.PULL_MESSAGE,
        RequestCode.LITE_PULL_MESSAGE,
        RequestCode.PEEK_MESSAGE,
        RequestCode.POP_MESSAGE,
        RequestCode.NOTIFICATION,
        RequestCode.POLLING_INFO,
    }
)


def vip_port_of(listen_port: int) -> int:
    """``listenPort - 2``, 0 (any port) when that is negative, as ``initializeRemotingServer``."""
    return max(listen_port - 2, 0)


class VipDispatcher(Dispatcher):
    """The fast server's dispatcher: the main one's routes minus :data:`NOT_ON_VIP_CHANNEL`."""

    def __init__(self, main: Dispatcher) -> None:
        super().__init__(f"{main.name}-vip")
        self.main = main
        self.refused = 0  # requests answered REQUEST_CODE_NOT_SUPPORTED for a main-only code

    def dispatch_nowait(self, ctx: RequestContext, request: RemotingCommand) -> HandlerResult | Waiting:
        self.requests += 1
        if request.code not in NOT_ON_VIP_CHANNEL:
            return self.main.dispatch_nowait(ctx, request)
        self.refused += 1
        refusal = self.main.guard_refusal(ctx, request)
        if refusal is not None:
            return None if request.is_oneway else refusal
        self._log_unsupported(ctx, request.code)
        response = request.make_response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
        )
        return None if request.is_oneway else response

    def statistics(self) -> dict[str, int]:
        return {"requests": self.requests, "refused": self.refused}
