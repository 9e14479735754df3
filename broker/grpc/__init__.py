"""The RocketMQ 5 gRPC protocol (apache.rocketmq.v2.MessagingService) in front of this broker.

Mirrors the Proxy in local mode (``org.apache.rocketmq.proxy.grpc.v2``): ``route`` (RouteActivity),
``client`` (ClientActivity with GrpcClientSettingsManager), ``send`` (SendMessageActivity over the
broker's send processor, as LocalMessageService calls it), ``consumer`` (the consuming
activities), ``lite`` (5.5's SyncLiteSubscription and the lite consumers' receive, which the Proxy
serves in cluster mode only), ``service`` (the method table of GrpcMessagingApplication),
``observe`` (every request's time to the metrics, refusals to a bounded log). Each handler is a
thin adapter: it converts the protobuf request, calls the broker service the remoting processors
use, and converts the answer; a failure becomes the response's ``status`` as the Proxy's
ResponseBuilder builds it, not a gRPC error.
"""
