"""POP consumption (RocketMQ 5): processors, revive records, the revive service, long polling.

:mod:`broker.pop.service` assembles it for :mod:`broker.app` (``register_pop`` and the revive loop).
"""
