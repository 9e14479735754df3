"""POP consumption (RocketMQ 5): the reader, checkpoints and revive records, the revive service,
long polling, orderly locks, and the NOTIFICATION and QUERY_ASSIGNMENT processors.

:mod:`broker.service.consume` owns the POP state behind both front doors; the POP, ACK and
CHANGE_MESSAGE_INVISIBLETIME door is :mod:`broker.processors.pop`; :mod:`broker.pop.service` runs
the revive loop; :mod:`broker.app` registers the processors.
"""
