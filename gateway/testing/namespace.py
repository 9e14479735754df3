"""A namespace per test: the names a namespaced client uses, for isolation on a shared gateway.

A RocketMQ namespace is client-side (:mod:`broker.grpc.namespace`): a Java remoting client given
``setNamespace(ns.name)`` sends topic ``T`` as ``ns.topic("T")`` (``"<ns>%T"``) and consumer
group ``G`` as ``ns.group("G")``; its retries go to ``ns.retry_topic("G")`` (``%RETRY%<ns>%G``)
and its dead letters to ``ns.dlq_topic("G")``. Two tests with their own namespaces can use the
same topic and group names and never see each other's messages, offsets or retries::

    def test_orders(rmq_namesrv: str, rmq_namespace: TestNamespace, rmq_gateway) -> None:
        producer.setNamespace(rmq_namespace.name)          # Java remoting client
        ...
        rmq_gateway.stored_messages(rmq_namespace.topic("orders"), wait_for=1)

``setNamespaceV2`` wraps no name in 5.3.3 (it only adds the ``nsd`` / ``ns`` request fields, which
no 5.3.3 broker reads), nor does the 5.3.3 Proxy apply a gRPC client's namespace (see
:mod:`broker.grpc.namespace`): give such clients the wrapped names (``ns.topic("T")``) instead.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from broker.grpc.namespace import without_namespace, wrap_namespace
from broker.topic_config_manager import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

MAX_NAMESPACE_LENGTH = 48  # leaves room for the topic name in TopicValidator's 127 characters
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class TestNamespace:
    """One namespace (``name``) and the resource names a client in it uses."""

    __test__ = False  # not a test class, whatever pytest's name patterns say

    name: str

    def topic(self, topic: str) -> str:
        """The topic name a client in this namespace sends for ``topic`` (``wrapNamespace``)."""
        return wrap_namespace(self.name, topic)

    def group(self, group: str) -> str:
        """The group name a client in this namespace sends for ``group``."""
        return wrap_namespace(self.name, group)

    def retry_topic(self, group: str) -> str:
        """The retry topic of ``group`` (``%RETRY%<ns>%group``)."""
        return RETRY_GROUP_TOPIC_PREFIX + self.group(group)

    def dlq_topic(self, group: str) -> str:
        """The dead-letter topic of ``group`` (``%DLQ%<ns>%group``)."""
        return DLQ_GROUP_TOPIC_PREFIX + self.group(group)

    def unwrap(self, resource: str) -> str:
        """``resource`` as a client in this namespace sees it (``withoutNamespace``)."""
        return without_namespace(resource)


def namespace_for(test_name: str, token: str | None = None) -> TestNamespace:
    """A namespace named after ``test_name`` (its characters outside ``[A-Za-z0-9_-]`` become
    ``_``), with a random suffix so that reruns and parallel workers never share one."""
    suffix = token if token is not None else secrets.token_hex(3)
    stem = _NOT_ALLOWED.sub("_", test_name).strip("_") or "test"
    return TestNamespace(f"{stem[: MAX_NAMESPACE_LENGTH - len(suffix) - 1]}-{suffix}")
