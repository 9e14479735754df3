"""POP consumption (RocketMQ 5): processors, revive records, the revive service, long polling.

:mod:`broker.service.consume` owns the POP state behind both front doors; :mod:`broker.pop.service`
runs the revive loop; :mod:`broker.app` registers the processors.
"""
