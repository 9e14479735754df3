"""The broker's typed operations, behind both front doors.

A remoting processor (:mod:`broker.processors`) and a gRPC activity (:mod:`broker.grpc`) are
adapters: each turns its protocol's request (a header and a body; a protobuf message) into the
typed request of one operation here, calls it, and turns the typed outcome, or the one error type
it raises with a RocketMQ response code and remark, into its protocol's answer. So the behaviour
of an operation (checks, the records it stores, what it answers) is written once, and neither
protocol pays for converting through the other. Java's Proxy has the same seam (its activities
call a ``MessagingProcessor``) but reaches a local broker by building remoting commands; nothing
here takes or returns a ``RemotingCommand``, a header or a header dict.

Floors: this package sits under the processors and the gRPC activities, and over the broker's
state (``BrokerController``, the managers, the store). It imports neither front door nor the
transport. A new operation goes in a module of its own here, named after the Java processor it
mirrors (``send.py`` for ``SendMessageProcessor``), with its request, outcome and refusal types
next to it; its two adapters stay thin.
"""
