"""The Broker: what RocketMQ's broker does with each request, behind both protocols.

Floors, from the bottom (``tests/test_layers.py`` holds them; no import runs up):

* **state**: :class:`broker.controller.BrokerController` and the managers it holds (topics
  ``topic_config_manager``, groups ``subscription_group_manager``, offsets
  ``consumer_offset_manager``, clients ``client_manager``, order locks ``rebalance_lock``, the
  one owner of the persisted ``config/`` tables ``config_tables``), the put side of the store
  (``message_service``), and the subsystems with state of their own:
  :mod:`broker.pop` (POP reader, checkpoints, revive), :mod:`broker.transaction`,
  :mod:`broker.timer`, ``schedule`` (delay levels), ``priority``, ``lite`` (5.5 lite topics and
  their subscriptions; ``lite_lifecycle`` their expiry and the group settings of a subscription
  change; ``lite_notify`` tells clients of those the broker drops), :mod:`broker.filter`
  (SQL92), :mod:`broker.auth` (ACL 2.0), :mod:`broker.ha` (master/slave replication),
  statistics and Prometheus metrics.
* **service**: :mod:`broker.service`, the typed operations both protocols share (send, recall,
  end of a transaction, pop/ack/change of invisible time, the lite pop, send-back).
* **front doors**: :mod:`broker.processors` (remoting request codes, one module per Java
  processor) and :mod:`broker.grpc` (the ``apache.rocketmq.v2`` activities, as the Proxy's).
  They adapt a protocol's request onto a service or the state and answer in that protocol; a
  module that speaks protobuf never builds a ``RemotingCommand``.
* **wiring**: :mod:`broker.app`, the one place that builds the broker: the store, the services,
  every request-code registration (``build_dispatcher``), the gRPC method table and its loops,
  the NameServer registration, replication and housekeeping.

Where new code goes: an operation both protocols offer, in :mod:`broker.service` with its two
adapters; a remoting-only request code, a processor in :mod:`broker.processors`, registered in
``build_dispatcher``; a gRPC RPC, an activity in :mod:`broker.grpc` (its request checks in
``broker.grpc.validation``); an ACL resource, :mod:`broker.auth`. Only the modules that wait
(long polling, fsyncs, sockets) import Trio; everything else is testable without an event loop.
"""
