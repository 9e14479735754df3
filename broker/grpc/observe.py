"""Every gRPC request the broker answers, told to its observers; every refusal, logged (bounded).

The gRPC counterpart of what the remoting dispatcher does for each request
(``gateway.transport.dispatch``): observers are told of each answered request with its time,
so the Prometheus exporter counts it in ``rocketmq_rpc_latency`` (:mod:`broker.prometheus`); a
request refused with a status (authentication or authorization denied, a request the checks of
``GrpcValidator`` reject, a throttled one) or ended with a gRPC error (a malformed message) gets
one INFO line naming the method, the client and the code, at most one per method and code every
10 s (:class:`~gateway.transport.log_limit.LogLimiter`), so a client repeating a refused request
cannot flood the log.

A *request* here is what the Proxy hands its activities: the one message of a unary call, the
one of a ``ReceiveMessage`` stream, and each ``Settings`` command of a ``Telemetry`` stream (the
stream itself lives as long as the client). Labels: :func:`method_label` (the RPC's name in
snake case, as the remoting request codes are named) and :func:`code_label` (the response's
``apache.rocketmq.v2.Code``, or the gRPC status that ended the call, lower case).

Java's Proxy records no latency of its gRPC calls (``RemotingMetricsManager`` only knows
``protocol_type="remoting"``); this broker counts them in the same histogram with
``protocol_type="grpc"``, so one dashboard shows both front doors.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable

from gateway.transport.grpc.proto import rocketmq_v2_pb2 as pb
from gateway.transport.grpc.status import StatusCode
from gateway.transport.log_limit import LogLimiter

logger = logging.getLogger(__name__)

RESULT_SUCCESS = "success"  # RemotingMetricsConstant.RESULT_SUCCESS: answered with a response
RESULT_FAILED = "process_request_failed"  # RemotingMetricsConstant.RESULT_PROCESS_REQUEST_FAILED

#: Told of every gRPC request answered: (method label, response code label, long polling,
#: result, milliseconds it took).
CallObserver = Callable[[str, str, bool, str, float], None]

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@functools.cache  # the methods are the service's few, named by this code, never by a client
def method_label(method: str) -> str:
    """``SendMessage`` -> ``send_message``: the RPC's name as the remoting request codes' labels
    are spelled (``send_message_v2``)."""
    return _CAMEL_BOUNDARY.sub("_", method).lower()


def code_label(code: int) -> str:
    """``apache.rocketmq.v2.Code`` 20000 -> ``ok``; an unknown number as itself."""
    try:
        return pb.Code.Name(code).lower()
    except ValueError:
        return str(code)


class CallRecorder:
    """The observers of one broker's gRPC requests and its bounded refusal log; see the module
    docstring. The activities call :meth:`start` when a request arrives and :meth:`answered`,
    :meth:`refused` or :meth:`failed` when it is done."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter, log: LogLimiter | None = None) -> None:
        self.clock = clock
        self.observers: list[CallObserver] = []
        self.refusal_log = log if log is not None else LogLimiter(logger)
        self.requests = 0
        self.refusals = 0

    def start(self) -> float:
        """The moment a request arrived, to hand back when it is done."""
        return self.clock() if self.observers else 0.0

    def answered(self, method: str, code: int, start: float, *, long_polling: bool = False) -> None:
        """``method`` answered with a response whose status is ``code`` (a v2 ``Code``)."""
        self._observe(method, code_label(code), long_polling, RESULT_SUCCESS, start)

    def refused(
        self, method: str, client: str, code: int, message: str, start: float, *, long_polling: bool = False
    ) -> None:
        """``method`` from ``client`` refused with status ``code`` and ``message``, answered."""
        self.refusals += 1
        label = code_label(code)
        self.refusal_log.info(
            (method, code), "grpc: %s from %s refused (code %s): %s", method, client, label, message
        )
        self._observe(method, label, long_polling, RESULT_SUCCESS, start)

    def failed(self, method: str, client: str, code: StatusCode, message: str, start: float) -> None:
        """``method`` from ``client`` ended with the gRPC status ``code`` instead of a response."""
        self.refusals += 1
        label = code.name.lower()
        self.refusal_log.info(
            (method, code), "grpc: %s from %s refused (%s): %s", method, client, code.name, message
        )
        self._observe(method, label, False, RESULT_FAILED, start)

    def _observe(self, method: str, code: str, long_polling: bool, result: str, start: float) -> None:
        self.requests += 1
        if self.observers:
            elapsed_ms = (self.clock() - start) * 1000
            name = method_label(method)
            for observer in self.observers:
                observer(name, code, long_polling, result, elapsed_ms)

    def statistics(self) -> dict[str, int]:
        return {"requests": self.requests, "refusals": self.refusals}
