"""Classic master/slave replication (``DefaultHAService``): roles, the master's HA port, the slave.

* :mod:`broker.ha.roles`: ``brokerRole`` / ``brokerId`` rules at start, the HA port, a slave's
  refusal of sends;
* :mod:`broker.ha.service`: the master's HA port, one connection per slave, SYNC_MASTER waits and
  the master's ``HARuntimeInfo``;
* :mod:`broker.ha.client`: the slave's connection to its master and its ``HARuntimeInfo``.

What is sent and how a slave appends it: :mod:`store.ha`. Not here: controller mode, DLedger,
the slave's copy of the master's metadata (``SlaveSynchronize``) and ``suggestWhichBrokerId``.
"""
