"""Transactional messages: half and op messages, the check-back service (no Trio here).

* :mod:`broker.transaction.bridge` - ``TransactionalMessageBridge`` / ``TransactionalMessageUtil``:
  how a half message is stored in ``RMQ_SYS_TRANS_HALF_TOPIC``, how a commit or rollback is
  recorded in ``RMQ_SYS_TRANS_OP_HALF_TOPIC``, and the ``CID_RMQ_SYS_TRANS`` offsets over both.
* :mod:`broker.transaction.check` - ``TransactionalMessageServiceImpl.check`` and
  ``DefaultTransactionalMessageCheckListener``: one check round over the half queue, sending
  CHECK_TRANSACTION_STATE to a live producer of the group (``Broker2Client``).

All state lives in the two system topics and in the consumer-offset table, as in Java, so it
survives a restart. The broker app runs the check round every ``transactionCheckInterval``.
"""
