"""The admin path of the tool: the remoting requests ``mqadmin`` sends to create and delete the
topics and groups each scenario owns, sent directly (milliseconds, where an ``mqadmin`` JVM takes
seconds), signed as ``AclClientRPCHook`` signs when access keys are given, over TLS with ``--tls``.

Mirrors what ``org.apache.rocketmq.tools.command.topic.UpdateTopicSubCommand -c CLUSTER`` does:
ask the NameServer for the cluster's brokers, then send UPDATE_AND_CREATE_TOPIC to every master.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any

import trio

from broker.auth.signature import sign_request
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from compat_tests.tool.target import TargetSpec
from gateway.transport.client import connect

CALL_TIMEOUT_S = 10.0
ROUTE_WAIT_S = 30.0


class AdminError(RuntimeError):
    """A request was answered with an error code, or not at all."""


def describe(err: BaseException) -> str:
    """One line for a failed call: the innermost errors of an exception group, with the cause
    of each (trio's "all attempts to connect failed" has the refusal as its cause)."""
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in err.exceptions)
    text = str(err) or type(err).__name__
    cause = err.__cause__
    if isinstance(cause, BaseExceptionGroup) and cause.exceptions:
        cause = cause.exceptions[0]
    if isinstance(cause, OSError) and cause.strerror:
        text += f" ({cause.strerror.lower()})"
    return text


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # as the Java client's default: it trusts any certificate
    return context


class Admin:
    """Admin requests to one target (each call opens one connection and closes it)."""

    def __init__(self, target: TargetSpec, timeout: float = CALL_TIMEOUT_S) -> None:
        self.target = target
        self.timeout = timeout
        self._masters: list[str] | None = None

    def invoke(
        self, addr: str, code: int, ext: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        """One request; :class:`AdminError` when the peer cannot be reached or does not answer."""
        fields = dict(ext or {})
        if self.target.access_key and self.target.secret_key:
            sign_request(fields, body or None, self.target.access_key, self.target.secret_key)
        tls = _tls_context() if self.target.tls else None

        async def call() -> RemotingCommand:
            async with connect(addr, tls=tls, connect_timeout_s=min(self.timeout, 5.0)) as conn:
                request = RemotingCommand(code=code, ext_fields=fields, body=body)
                return await conn.invoke(request, self.timeout)

        try:
            return trio.run(call)
        except Exception as err:
            raise AdminError(f"{addr}: {describe(err)}") from err

    def _ok(self, response: RemotingCommand, what: str) -> RemotingCommand:
        if response.code != ResponseCode.SUCCESS:
            text = f"{what}: code {response.code} {response.remark or ''}".strip()
            if response.code == ResponseCode.NO_PERMISSION and not self.target.access_key:
                text += " (the target authenticates requests: give --access-key and --secret-key)"
            raise AdminError(text)
        return response

    def cluster_info(self) -> dict[str, Any]:
        """The NameServer's ClusterInfo: ``brokerAddrTable`` and ``clusterAddrTable``."""
        response = self.invoke(self.target.namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
        info = fastjson.loads(self._ok(response, "cluster info").body)
        return info if isinstance(info, dict) else {}

    def masters(self) -> list[str]:
        """Master addresses of the target's cluster (``--cluster``, or every cluster when unset)."""
        if self._masters is not None:
            return self._masters
        info = self.cluster_info()
        clusters: dict[str, list[str]] = info.get("clusterAddrTable") or {}
        brokers: dict[str, dict[str, Any]] = info.get("brokerAddrTable") or {}
        if self.target.cluster is not None:
            if self.target.cluster not in clusters:
                raise AdminError(
                    f"no cluster {self.target.cluster!r} (known: {', '.join(clusters) or 'none'})"
                )
            names = list(clusters[self.target.cluster])
        else:
            names = [name for members in clusters.values() for name in members]
        found = []
        for name in names:
            addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
            master = addrs.get(0, addrs.get("0"))
            if master:
                found.append(str(master))
        if not found:
            raise AdminError("the NameServer knows no master broker")
        self._masters = found
        return found

    def cluster_name(self) -> str:
        if self.target.cluster is not None:
            return self.target.cluster
        clusters = self.cluster_info().get("clusterAddrTable") or {}
        return str(next(iter(clusters), "DefaultCluster"))

    def routed(self, topic: str) -> bool:
        response = self.invoke(self.target.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return response.code == ResponseCode.SUCCESS and bool(response.body)

    def create_topic(
        self, topic: str, *, queues: int = 4, attributes: str | None = None, order: bool = False
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC on every master, then wait until the NameServer routes it."""
        ext = {
            "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues),
            "writeQueueNums": str(queues), "perm": "6", "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0", "order": str(order).lower(),
        }  # fmt: skip
        if attributes:
            ext["attributes"] = attributes
        for master in self.masters():
            self._ok(
                self.invoke(master, RequestCode.UPDATE_AND_CREATE_TOPIC, ext), f"create topic on {master}"
            )
        deadline = time.monotonic() + ROUTE_WAIT_S
        while not self.routed(topic):
            if time.monotonic() > deadline:
                raise AdminError(f"{topic} not routed by the NameServer within {ROUTE_WAIT_S:g} s")
            time.sleep(0.2)

    def create_group(
        self, group: str, *, retry_max: int = 16, broadcast: bool = False, orderly: bool = False
    ) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (a SubscriptionGroupConfig body) on every master."""
        config = {
            "groupName": group, "consumeEnable": True, "consumeFromMinEnable": True,
            "consumeBroadcastEnable": broadcast, "retryQueueNums": 1, "retryMaxTimes": retry_max,
            "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": True,
            "consumeMessageOrderly": orderly,
        }  # fmt: skip
        body = json.dumps(config).encode()
        for master in self.masters():
            response = self.invoke(master, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
            self._ok(response, f"create group on {master}")

    def delete_topic(self, topic: str) -> None:
        for master in self.masters():
            self.invoke(master, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})
        self.invoke(self.target.namesrv, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})

    def delete_group(self, group: str) -> None:
        for master in self.masters():
            self.invoke(
                master, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": group, "cleanOffset": "true"}
            )

    def set_pop_mode(self, topic: str, group: str) -> None:
        """SET_MESSAGE_REQUEST_MODE to POP on every master (``mqadmin setConsumeMode -m POP``)."""
        body = json.dumps(
            {"topic": topic, "consumerGroup": group, "mode": "POP", "popShareQueueNum": 0}
        ).encode()
        for master in self.masters():
            response = self.invoke(master, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)
            self._ok(response, f"set POP mode on {master}")
