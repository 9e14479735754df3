"""Trio at the edge, and the composition of the program.

Two floors share this package (``tests/test_layers.py``):

* :mod:`gateway.transport`, below :mod:`namesrv` and :mod:`broker`: the remoting servers and
  connections, the request dispatcher, outbound calls, TLS, and :mod:`gateway.transport.grpc`
  (HTTP/2 and gRPC framing, the gRPC server, the ``apache.rocketmq.v2`` schema and its generated
  message classes), and :mod:`gateway.transport.faults` (fault rules the dispatcher consults, for
  tests). Protocol mechanics only: no broker behaviour lives here.
* The top floor, above everything: :mod:`gateway.launcher` (which components run in one process
  and how they are started and stopped), :mod:`gateway.cli` (``rmq-gateway``),
  :mod:`gateway.native` (the mypyc build of the hot path) and :mod:`gateway.testing` (the gateway
  as a test broker: probe, testcontainers module, pytest plugin, per-test namespaces),
  :mod:`gateway.control` (the HTTP control endpoint: fault rules, a topic's stored messages, a
  group's offsets, retries and dead letters, reset; ``rmq-gateway fault``) and
  :mod:`gateway.resources` (topics and groups declared before ``ready``).

A new protocol mechanism goes in :mod:`gateway.transport`; what a request does goes in the broker
or the NameServer; a new way to run or test the gateway goes on the top floor.
"""
