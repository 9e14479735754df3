"""Broker roles of the classic master/slave setup: checks at start, and a slave's refusals.

Mirrors ``BrokerStartup`` (a master's ``brokerId`` is forced to 0, a slave's must be > 0, an
unset ``haListenPort`` is ``listenPort + 1``) and the slave's ``SendMessageProcessor.rejectRequest``:
a slave answers every send, batch send and send-back with ``SYSTEM_BUSY`` and the remark Netty's
``NettyRemotingAbstract`` writes for a rejected request, before the header is even decoded, and
END_TRANSACTION with ``SLAVE_NOT_AVAILABLE`` (``EndTransactionProcessor``). Without
``slaveReadEnable`` a slave rejects pulls the same way (``PullMessageProcessor.rejectRequest``),
so a consumer reads from a slave only where the operator allowed it. Puts
that reach the store some other way are refused there (``HookUtils.checkBeforePutMessage``:
``SERVICE_NOT_AVAILABLE``), see :class:`store.message_store.MessageStore`.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from gateway.transport.dispatch import Guard, RequestContext
from store.config import SLAVE, StoreConfig

MASTER_ID = 0  # MixAll.MASTER_ID
JAVA_DEFAULT_HA_PORT = 10912  # MessageStoreConfig.haListenPort: the value meaning "not configured"
REJECT_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
#: The codes ``SendMessageProcessor`` is registered for, which a slave rejects.
SLAVE_REJECTED_CODES = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.CONSUMER_SEND_MSG_BACK,
    }
)
#: The codes ``PullMessageProcessor`` is registered for, which a slave without ``slaveReadEnable`` rejects.
SLAVE_READ_CODES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE})


SLAVE_MEMORY_RATIO_CUT = 10  # BrokerStartup: a slave's accessMessageInMemoryMaxRatio is 10 points lower


def apply_broker_role(config: BrokerConfig, store_config: StoreConfig) -> None:
    """``BrokerStartup``'s role rules: a master's id becomes 0; raises ``ValueError`` for a slave
    whose ``brokerId`` is not positive (the Java broker prints "Slave's brokerId must be > 0" and
    exits); a slave counts 10 % less of its memory as holding recent messages."""
    if store_config.broker_role == SLAVE:
        if config.broker_id <= 0:
            raise ValueError("Slave's brokerId must be > 0")
        store_config.access_message_in_memory_max_ratio -= SLAVE_MEMORY_RATIO_CUT
    else:
        config.broker_id = MASTER_ID


def ha_port_of(config: BrokerConfig) -> int:
    """The HA port to listen on: ``haListenPort`` if set, else ``listenPort + 1``."""
    if config.ha_listen_port != JAVA_DEFAULT_HA_PORT:
        return config.ha_listen_port
    return config.listen_port + 1


class SlaveRejectedError(RocketMQError):
    """A write request on a slave (``rejectRequest``)."""

    response_code = ResponseCode.SYSTEM_BUSY


def slave_guard(inner: Guard | None, *, slave_read_enable: bool) -> Guard:
    """A dispatcher guard that rejects the send codes, and the pull codes unless
    ``slave_read_enable`` (a slave's ``rejectRequest``), and hands every other request to
    ``inner`` (the broker's authentication, if any)."""
    rejected = SLAVE_REJECTED_CODES if slave_read_enable else SLAVE_REJECTED_CODES | SLAVE_READ_CODES

    def guard(ctx: RequestContext, request: RemotingCommand) -> None:
        if request.code in rejected:
            raise SlaveRejectedError(REJECT_REMARK)
        if request.code == RequestCode.END_TRANSACTION:  # EndTransactionProcessor: no remark
            raise SlaveRejectedError(response_code=ResponseCode.SLAVE_NOT_AVAILABLE, null_remark=True)
        if inner is not None:
            inner(ctx, request)

    return guard


def suggest_which_broker_id(
    config: BrokerConfig, which_broker_when_consume_slowly: int, group_broker_id: int, from_slave: bool
) -> int:
    """The ``suggestWhichBrokerId`` of a pull answer (``PullMessageProcessor.composeResponseHeader``):
    with ``slaveReadEnable`` a consumer reading far behind (``from_slave``: what it asks for is no
    longer in memory) is sent to the group's ``whichBrokerWhenConsumeSlowly``, else to the
    group's ``brokerId``; without it, and on a slave whenever the consumer is not behind, to the
    master."""
    suggest = MASTER_ID
    if config.slave_read_enable:
        suggest = which_broker_when_consume_slowly if from_slave else group_broker_id
    if config.broker_id != MASTER_ID and not from_slave:
        suggest = MASTER_ID
    return suggest
