"""Faults on demand: rules that make the remoting servers answer busy, answer late, drop a
connection or never answer, so a test can drive a client's error path.

Trio-free. The composition builds one :class:`FaultTable` and hands each dispatcher the
:class:`FaultPoint` of its server (``table.point("broker")``, ``table.point("namesrv")``); the
:class:`gateway.transport.dispatch.Dispatcher` asks its point, after the guard and the header
decoding and before the handler, whether a rule matches. With no rule for a server its point's
:attr:`FaultPoint.rules` is an empty tuple, so a request pays one attribute check.

A rule (:class:`FaultRule`) matches a request by its code (the number or the Java name of
``RequestCode``), optionally by topic and by group (the decoded header's ``topic``, and its
``consumer_group`` or ``producer_group``), and acts once it fires:

* ``respond``: answer with that response code and ``remark`` instead of calling the handler
  (``SYSTEM_BUSY`` gets the real broker's flow-control remark unless another is given);
* ``delay_ms``: wait that long first (then respond, close, drop, or run the real handler);
* ``close``: close the connection without an answer;
* ``drop``: never answer (the client's call times out).

A rule whose ``request`` names a gRPC method (``"SendMessage"``, ``"ReceiveMessage"``,
``"Telemetry"``, or a full path; see :mod:`gateway.transport.fault_methods`) has target ``grpc``:
the gRPC endpoint's unary adapter (:mod:`broker.grpc.faults`) and its streaming wrapper
(:mod:`broker.grpc.stream_faults`, per request message) ask ``table.point("grpc")``, matching the
request message's ``topic.name`` (or its first message's, or its queue's) and ``group.name``.
There ``respond`` is an ``apache.rocketmq.v2.Code`` (number or name) put in the response's
``status`` (``TOO_MANY_REQUESTS`` with the busy remark, as the Proxy relays a busy broker),
``close`` ends the call with gRPC UNAVAILABLE, ``drop`` never answers.

A ``request`` of ``"*"`` matches every request of the rule's target: ``{"request": "*", "drop":
true}`` pauses a broker (connections accepted, nothing answered, as a stopped process or a long
GC pause looks to a client), and removing the rule resumes it; the requests it held stay
unanswered (their callers have timed out by then).

It fires ``times`` times (then stays listed, inactive), for ``duration_ms`` from when it was
added, and each time with ``probability`` (drawn from one RNG, seeded by the table's ``seed`` for
reproducible runs). Every firing is logged at INFO. The table is changed from other threads (a
test's, while the servers run under Trio in theirs): one lock guards its rules and counters.
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from codec.codes import RequestCode, ResponseCode
from gateway.transport.fault_methods import (
    GRPC_METHODS,
    GRPC_STREAMING_METHODS,
    GRPC_TOO_MANY_REQUESTS,
    FaultSpecError,
    grpc_code_of,
    grpc_method_of,
)
from gateway.transport.fault_methods import request_name as _request_name

logger = logging.getLogger(__name__)

TARGETS = ("broker", "namesrv", "grpc")
#: What the Java broker answers a send that waited too long under flow control
#: (org.apache.rocketmq.broker.latency.BrokerFastFailure.cleanExpiredRequest, page cache busy);
#: the queue time and size are what it formats in, here those of a request that did not wait.
BUSY_REMARK = (
    "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 0ms, size of queue: 0"
)
#: A rule's ``request`` that matches every request of its server (``drop`` with it pauses the
#: server: it accepts connections and requests and answers none).
ANY = "*"
_ACTIONS = ("respond", "close", "drop")
_KEYS = frozenset(
    {"request", "target", "topic", "group", "respond", "remark", "delay_ms", "close", "drop"}
    | {"times", "duration_ms", "probability"}
)

Sleep = Callable[[float], Awaitable[None]]


class FaultRuleError(FaultSpecError):
    """A fault rule that cannot be built: the message says which field and why."""


def request_code_of(value: object) -> int:
    """A request code from its number or its Java name (``"SEND_MESSAGE_V2"``); raises
    :class:`FaultRuleError` for anything else."""
    if isinstance(value, bool):
        raise FaultRuleError(f"request: {value!r} is neither a RequestCode name nor a number")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            return int(RequestCode[text.upper()])
        except KeyError:
            raise FaultRuleError(f"request: unknown RequestCode name {value!r}") from None
    raise FaultRuleError(f"request: {value!r} is neither a RequestCode name nor a number")


def _number(spec: Mapping[str, Any], key: str, *, minimum: float, integer: bool = True) -> Any:
    value = spec.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and not isinstance(value, int))
    ):
        raise FaultRuleError(f"{key}: {value!r} is not {'an integer' if integer else 'a number'}")
    if value < minimum:
        raise FaultRuleError(f"{key}: {value!r} is below {minimum:g}")
    return value


def _text(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise FaultRuleError(f"{key}: {value!r} is not a string")
    return value


def _flag(spec: Mapping[str, Any], key: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise FaultRuleError(f"{key}: {value!r} is not true or false")
    return value


@dataclass(frozen=True, slots=True)
class FaultRule:
    """What to match and what to do; see the module docstring. Build with :meth:`of`."""

    request: int | str
    target: str = "broker"
    topic: str | None = None
    group: str | None = None
    respond: int | None = None
    remark: str | None = None
    delay_ms: int = 0
    close: bool = False
    drop: bool = False
    times: int | None = None
    duration_ms: int | None = None
    probability: float = 1.0

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> FaultRule:
        """A rule from its JSON form (the keys of the module docstring); raises
        :class:`FaultRuleError` naming the first bad field."""
        unknown = sorted(set(spec) - _KEYS)
        if unknown:
            raise FaultRuleError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}")
        if "request" not in spec:
            raise FaultRuleError(
                "request: missing (a RequestCode name such as SEND_MESSAGE_V2, or its number)"
            )
        try:
            method = grpc_method_of(spec["request"])
            if spec["request"] == ANY:
                method = ANY
            target = spec.get("target", "grpc" if method not in (None, ANY) else "broker")
            if target not in TARGETS:
                raise FaultRuleError(f"target: {target!r} is not one of {', '.join(TARGETS)}")
            if method != ANY and (method is not None) != (target == "grpc"):
                raise FaultRuleError(
                    f"request: {spec['request']!r} with target {target!r}: gRPC methods "
                    f"({', '.join((*GRPC_METHODS, *GRPC_STREAMING_METHODS))}) go with target grpc, "
                    "RequestCodes with broker or namesrv"
                )
            if target == "grpc":
                respond = grpc_code_of(spec.get("respond"))
            else:
                respond = _number(spec, "respond", minimum=0)
        except FaultRuleError:
            raise
        except FaultSpecError as err:
            raise FaultRuleError(str(err)) from None
        close, drop = _flag(spec, "close"), _flag(spec, "drop")
        delay_ms = _number(spec, "delay_ms", minimum=0) or 0
        chosen = [name for name, on in zip(_ACTIONS, (respond is not None, close, drop), strict=True) if on]
        if len(chosen) > 1:
            raise FaultRuleError(f"{' and '.join(chosen)}: a rule does one of respond, close, drop")
        if not chosen and delay_ms == 0:
            raise FaultRuleError("a rule needs respond, close, drop or delay_ms")
        remark = _text(spec, "remark")
        if remark is not None and respond is None:
            raise FaultRuleError("remark: only with respond")
        probability = _number(spec, "probability", minimum=0, integer=False)
        if probability is not None and probability > 1:
            raise FaultRuleError(f"probability: {probability!r} is above 1")
        times = _number(spec, "times", minimum=1)
        duration_ms = _number(spec, "duration_ms", minimum=1)
        return cls(
            request=method if method is not None else request_code_of(spec["request"]),
            target=target,
            topic=_text(spec, "topic"),
            group=_text(spec, "group"),
            respond=respond,
            remark=remark,
            delay_ms=delay_ms,
            close=close,
            drop=drop,
            times=times,
            duration_ms=duration_ms,
            probability=1.0 if probability is None else float(probability),
        )

    def to_json(self) -> dict[str, Any]:
        """The rule's JSON form, the request by its Java name; fields left at default are left out."""
        out: dict[str, Any] = {"request": _request_name(self.request), "target": self.target}
        for key in ("topic", "group", "respond", "remark", "times", "duration_ms"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.delay_ms:
            out["delay_ms"] = self.delay_ms
        if self.close:
            out["close"] = True
        if self.drop:
            out["drop"] = True
        if self.probability != 1.0:
            out["probability"] = self.probability
        return out

    def matches(self, code: int | str, header: object) -> bool:
        """Whether a request of ``code`` (a gRPC method's path for target grpc) with this decoded
        header (None: none) is one of ours."""
        if code != self.request and self.request != ANY:
            return False
        if self.topic is not None and getattr(header, "topic", None) != self.topic:
            return False
        if self.group is not None:
            groups = (getattr(header, "consumer_group", None), getattr(header, "producer_group", None))
            if self.group not in groups:
                return False
        return True


class Fault:
    """A rule in a table: its id, how often it fired, until when it lives; and, once it fired,
    the answer to give (:meth:`response_of`)."""

    __slots__ = ("active", "expires_at", "fired", "id", "rule")

    def __init__(self, fault_id: int, rule: FaultRule, now: float) -> None:
        self.id = fault_id
        self.rule = rule
        self.fired = 0
        self.active = True
        self.expires_at = None if rule.duration_ms is None else now + rule.duration_ms / 1000

    @property
    def delay_s(self) -> float:
        return self.rule.delay_ms / 1000

    @property
    def remark(self) -> str | None:
        rule = self.rule
        busy = GRPC_TOO_MANY_REQUESTS if rule.target == "grpc" else ResponseCode.SYSTEM_BUSY
        if rule.remark is None and rule.respond == busy:
            return BUSY_REMARK
        return rule.remark

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, **self.rule.to_json(), "fired": self.fired, "active": self.active}

    def action(self) -> str:
        rule = self.rule
        if rule.respond is not None:
            return f"respond {rule.respond}"
        if rule.close:
            return "end the call UNAVAILABLE" if rule.target == "grpc" else "close the connection"
        if rule.drop:
            return "no answer"
        return "answer"


class FaultPoint:
    """The rules of one server (``target``), as its dispatcher sees them."""

    __slots__ = ("rules", "sleep", "table", "target")

    def __init__(self, table: FaultTable, target: str, sleep: Sleep | None) -> None:
        self.table = table
        self.target = target
        self.sleep = sleep
        #: The active rules of this server: empty unless asked for (the dispatcher checks this).
        self.rules: tuple[Fault, ...] = ()

    def match(self, code: int | str, header: object, who: object) -> Fault | None:
        """The first active rule that matches and fires now (counted and logged), else None;
        ``who`` names the connection in the log line."""
        return self.table.fire(self, code, header, who)


class FaultTable:
    """Every fault rule of a gateway; see the module docstring.

    ``sleep``: how a delay waits (``trio.sleep`` in the composition); without it a rule with
    ``delay_ms`` is refused. ``clock``: seconds, for ``duration_ms``. ``seed``: of the RNG
    behind ``probability``.
    """

    def __init__(
        self,
        sleep: Sleep | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
    ) -> None:
        self.clock = clock
        self._sleep = sleep
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._faults: dict[int, Fault] = {}
        self._next_id = 1
        self._points = {target: FaultPoint(self, target, sleep) for target in TARGETS}

    def point(self, target: str) -> FaultPoint:
        """The rules of ``target`` (``"broker"``, ``"namesrv"``, ``"grpc"``) for its dispatcher; raises
        KeyError for another name."""
        return self._points[target]

    def add(self, rule: FaultRule | Mapping[str, Any] | None = None, **spec: Any) -> int:
        """Add a rule (a :class:`FaultRule`, its JSON form, or that form as keywords:
        ``add(request="SEND_MESSAGE_V2", respond=2, times=2)``) and return its id; raises
        :class:`FaultRuleError` for a malformed one."""
        if not isinstance(rule, FaultRule):
            rule = FaultRule.of({**(rule or {}), **spec})
        if rule.delay_ms and self._sleep is None:
            raise FaultRuleError("delay_ms: this table has no way to wait (no sleep given)")
        with self._lock:
            fault = Fault(self._next_id, rule, self.clock())
            self._next_id += 1
            self._faults[fault.id] = fault
            self._publish(rule.target)
        logger.info("fault %d added: %s", fault.id, rule.to_json())
        return fault.id

    def remove(self, fault_id: int) -> bool:
        """Remove one rule; False when there is none of that id."""
        with self._lock:
            fault = self._faults.pop(fault_id, None)
            if fault is not None:
                self._publish(fault.rule.target)
        if fault is not None:
            logger.info("fault %d removed (fired %d times)", fault_id, fault.fired)
        return fault is not None

    def clear(self) -> int:
        """Remove every rule; returns how many there were."""
        with self._lock:
            count = len(self._faults)
            self._faults.clear()
            for target in TARGETS:
                self._publish(target)
        if count:
            logger.info("%d fault(s) cleared", count)
        return count

    def list(self) -> builtins.list[dict[str, Any]]:
        """Every rule in its JSON form with ``id``, ``fired`` and ``active``, oldest first."""
        with self._lock:
            self._expire(self.clock())
            return [fault.describe() for fault in self._faults.values()]

    def get(self, fault_id: int) -> dict[str, Any] | None:
        with self._lock:
            fault = self._faults.get(fault_id)
            return None if fault is None else fault.describe()

    def fire(self, point: FaultPoint, code: int | str, header: object, who: object) -> Fault | None:
        """:meth:`FaultPoint.match`: the rule that fires for this request, if any."""
        with self._lock:
            now = self.clock()
            for fault in point.rules:
                rule = fault.rule
                if not fault.active or not rule.matches(code, header):
                    continue
                if fault.expires_at is not None and now >= fault.expires_at:
                    self._expire(now)
                    continue
                if rule.probability < 1.0 and self._random.random() >= rule.probability:
                    continue
                fault.fired += 1
                if rule.times is not None and fault.fired >= rule.times:
                    fault.active = False
                    self._publish(rule.target)
                break
            else:
                return None
        logger.info(
            "fault %d fired on %s: %s from %s, %s%s (%d time(s))",
            fault.id,
            point.target,
            _request_name(code),
            who,
            f"after {rule.delay_ms} ms, " if rule.delay_ms else "",
            fault.action(),
            fault.fired,
        )
        return fault

    def _expire(self, now: float) -> None:
        """Deactivate rules past their ``duration_ms`` (the lock is held)."""
        for fault in self._faults.values():
            if fault.active and fault.expires_at is not None and now >= fault.expires_at:
                fault.active = False
                self._publish(fault.rule.target)

    def _publish(self, target: str) -> None:
        """Give ``target``'s dispatcher its active rules (the lock is held)."""
        self._points[target].rules = tuple(
            fault for fault in self._faults.values() if fault.active and fault.rule.target == target
        )

    def statistics(self) -> dict[str, int]:
        with self._lock:
            return {
                "rules": len(self._faults),
                "active": sum(fault.active for fault in self._faults.values()),
                "fired": sum(fault.fired for fault in self._faults.values()),
            }
