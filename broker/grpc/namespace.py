"""Namespaces: resource names of the form ``namespace%name``, as the 5.3.3 clients and Proxy treat them.

Mirrors org.apache.rocketmq.remoting.protocol.NamespaceUtil. A namespace is a client-side
prefix: a remoting client with ``ClientConfig.setNamespace("ns1")`` (4.x, and 5.3.3 where it is
deprecated but kept) sends topic ``T`` as ``ns1%T`` and group ``G`` as ``ns1%G``; its retry topic
is ``%RETRY%ns1%G`` and its dead-letter topic ``%DLQ%ns1%G``. ``setNamespaceV2`` (5.x) wraps no
name: the client's ``NamespaceRpcHook`` adds ``nsd=true`` and ``ns=<namespace>`` to every
request's fields, which no 5.3.3 broker or Proxy reads (nor do we). System topics
(``TopicValidator.isSystemTopic``) and system groups (``MixAll.isSysConsumerGroup``) are never
wrapped. The broker does nothing with the prefix: ``ns1%T`` is a topic like any other (``%`` is
one of the characters ``TopicValidator`` allows), so two namespaces never see each other's
messages.

The 5.3.3 Proxy records the gRPC ``x-mq-namespace`` header (``ContextInitPipeline``) but its
activities use each ``Resource``'s ``name`` as it comes, neither wrapping it with the header nor
with ``resource_namespace``; only in answers does ``GrpcConverter.buildResource`` split a stored
topic name into ``name`` and ``resource_namespace`` (:func:`resource_of`), which is how a gRPC
client sees a message a namespaced remoting client stored.
"""

from __future__ import annotations

from broker.topic_config_manager import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    STATIC_SYSTEM_TOPICS,
    SYSTEM_TOPIC_PREFIX,
)
from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb

NAMESPACE_SEPARATOR = "%"  # NamespaceUtil.NAMESPACE_SEPARATOR
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"  # MixAll.CID_RMQ_SYS_PREFIX


def is_system_resource(resource: str) -> bool:
    """``NamespaceUtil.isSystemResource``: a system topic or a system consumer group."""
    return (
        resource in STATIC_SYSTEM_TOPICS
        or resource.startswith(SYSTEM_TOPIC_PREFIX)
        or resource.startswith(SYSTEM_GROUP_PREFIX)
    )


def without_retry_and_dlq(resource: str) -> str:
    """``NamespaceUtil.withOutRetryAndDLQ``: the name after a ``%RETRY%`` or ``%DLQ%`` prefix."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if resource.startswith(prefix):
            return resource[len(prefix) :]
    return resource


def _retry_dlq_prefix(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_GROUP_TOPIC_PREFIX
    if resource.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return DLQ_GROUP_TOPIC_PREFIX
    return ""


def wrap_namespace(namespace: str | None, resource: str) -> str:
    """``NamespaceUtil.wrapNamespace``: ``T`` becomes ``ns%T``, ``%RETRY%G`` becomes
    ``%RETRY%ns%G``; system resources, names already in ``namespace`` and an empty namespace
    leave ``resource`` as it is."""
    if not namespace or not resource or is_system_resource(resource):
        return resource
    bare = without_retry_and_dlq(resource)
    if bare.startswith(namespace + NAMESPACE_SEPARATOR):
        return resource
    return f"{_retry_dlq_prefix(resource)}{namespace}{NAMESPACE_SEPARATOR}{bare}"


def without_namespace(resource: str) -> str:
    """``NamespaceUtil.withoutNamespace(resource)``: the name without whatever namespace it has
    (``%RETRY%ns%G`` becomes ``%RETRY%G``)."""
    if not resource or is_system_resource(resource):
        return resource
    bare = without_retry_and_dlq(resource)
    index = bare.find(NAMESPACE_SEPARATOR)
    if index > 0:
        return _retry_dlq_prefix(resource) + bare[index + 1 :]
    return resource


def namespace_of(resource: str) -> str:
    """``NamespaceUtil.getNamespaceFromResource``: the namespace of ``resource`` ('' if none)."""
    if not resource or is_system_resource(resource):
        return ""
    bare = without_retry_and_dlq(resource)
    index = bare.find(NAMESPACE_SEPARATOR)
    return bare[:index] if index > 0 else ""


def resource_of(name: str) -> pb.Resource:
    """``GrpcConverter.buildResource``: a stored name as a gRPC client sees it in an answer."""
    return pb.Resource(name=without_namespace(name), resource_namespace=namespace_of(name))
