"""gRPC over HTTP/2 on Trio: the transport of RocketMQ 5's gRPC protocol (apache.rocketmq.v2).

``status`` (gRPC status codes and the error handlers raise), ``framing`` (gRPC's length-prefixed
messages and header values, no I/O), ``server`` (the HTTP/2 connections, streams and the
method table), ``connection`` (one HTTP/2 connection: its reader, its writer, its calls) on
``http2`` (the server side of HTTP/2 as gRPC uses it, no I/O) and ``header_block`` (HPACK).
The message classes come from ``proto/`` (generated at setup time by ``protogen``). The RPC
handlers live in ``broker/grpc/``. TLS and plaintext on one port are shared with the remoting
ports: :mod:`gateway.transport.tls`.
"""
