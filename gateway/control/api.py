"""The control endpoint's routes, Trio-free: a request (method, target, body) in, a status and a
JSON value out. :mod:`gateway.control.server` speaks HTTP around it.

=========================================  ==================================================
``GET /health``                            200 ``{"status": "ok"}``
``GET /faults``                            200: every rule with ``id``, ``fired``, ``active``
``POST /faults`` (a rule as JSON)          201: the rule with its ``id``; 400 for a bad one
``GET /faults/{id}``                       200, or 404
``DELETE /faults/{id}``                    204, or 404
``DELETE /faults``                         200 ``{"removed": n}``
``GET /topics/{topic}/messages?limit=N``   200: the topic's stored messages (store order)
``GET /groups/{group}/offsets?topic=T``    200: per topic and queue, the broker offset, the
                                           group's offset, the lag; 404 for an unknown group
``GET /groups/{group}/retry?limit=N``      200: messages sent back for a retry (``delayed``)
``GET /groups/{group}/dlq?limit=N``        200: the group's dead letters
``POST /reset``                            200: what went (topics, groups, queues, offsets,
                                           faults): the gateway emptied for the next test
``GET /broker/disk-full``                  200 ``{"diskFull": false}``: writes refused?
``POST /broker/disk-full``                 200 ``{"diskFull": true}``: refuse writes as a full
                                           disk does (SERVICE_NOT_AVAILABLE, broker's remark)
``DELETE /broker/disk-full``               200 ``{"diskFull": false}``: accept writes again
``POST /groups/{group}/rewind?topic=T&count=N``
                                           200 ``{"offsets": {queue: offset}}``: deliver the
                                           group's last N messages a queue again (404: no such
                                           topic or no offset of the group on it)
``GET /routes/brokers``                    200 ``{"withheld": [...]}``: brokers out of the routes
``DELETE /routes/brokers/{name}``          200: take the broker out of the NameServer's routes
``POST /routes/brokers/{name}``            200: put it back
=========================================  ==================================================

Errors are ``{"error": "..."}`` with a 4xx status: 400 for a body that is not a JSON object or
a rule that cannot be built (the message names the field), 404 for an unknown path, id, or no
broker in this process, 405 for a method a path does not take.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from broker.controller import BrokerController
from gateway.control.consumption import UnknownGroupError, dlq_messages, group_offsets, retry_messages
from gateway.control.messages import DEFAULT_LIMIT, MAX_LIMIT, stored_messages
from gateway.transport.faults import FaultRuleError, FaultTable
from store.message_reader import MessageReader


@dataclass(frozen=True, slots=True)
class Reply:
    """A status and the JSON value of the body (None: no body, as for 204)."""

    status: int
    body: Any = None


def _error(status: int, message: str) -> Reply:
    return Reply(status, {"error": message})


class ControlApi:
    """The routes of the module docstring over a fault table and, when this process runs a
    broker, its store (``store_of`` returns None otherwise)."""

    def __init__(
        self,
        faults: FaultTable,
        store_of: Callable[[], MessageReader | None],
        reset: Callable[[], dict[str, int]] | None = None,
        controller_of: Callable[[], BrokerController | None] | None = None,
        disk_full: Callable[[bool | None], bool] | None = None,
        withhold_route: Callable[[str, bool | None], list[str]] | None = None,
        rewind: Callable[[str, str, int], dict[int, int]] | None = None,
    ) -> None:
        """``reset``: empties the gateway (:meth:`gateway.launcher.Gateway.reset`);
        ``controller_of``: the running broker's state, for the group routes. None: those routes
        answer 404. ``disk_full``: sets (True, False) or reads (None) the injected full disk,
        returning the state before (:mod:`gateway.control.broker_faults`).
        ``withhold_route``: takes a broker out of the NameServer's routes or puts it back
        (:mod:`gateway.control.broker_faults`). ``rewind``: delivers a group's messages
        again (:func:`broker.service.rewind.rewind`)."""
        self.faults = faults
        self.disk_full = disk_full
        self.withhold_route = withhold_route
        self.rewind = rewind
        self.store_of = store_of
        self.reset = reset
        self.controller_of = controller_of or (lambda: None)

    def handle(self, method: str, target: str, body: bytes) -> Reply:
        """The reply to one request; never raises for what a client sent."""
        url = urlsplit(target)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = parse_qs(url.query)
        if parts == ["health"]:
            return Reply(200, {"status": "ok"}) if method in ("GET", "HEAD") else _not_allowed(method, "GET")
        if parts == ["faults"]:
            return self._faults(method, body)
        if len(parts) == 3 and parts[0] == "groups" and parts[2] == "rewind":
            return self._rewind(method, parts[1], query)
        if len(parts) == 3 and parts[0] == "groups" and parts[2] in ("offsets", "retry", "dlq"):
            if method != "GET":
                return _not_allowed(method, "GET")
            return self._group(parts[1], parts[2], query)
        if parts == ["reset"]:
            if method != "POST":
                return _not_allowed(method, "POST")
            if self.reset is None:
                return _error(404, "no broker in this process")
            return Reply(200, self.reset())
        if parts == ["broker", "disk-full"]:
            return self._disk_full(method)
        if parts[:2] == ["routes", "brokers"] and len(parts) <= 3:
            return self._routes(method, parts[2] if len(parts) == 3 else None)
        if len(parts) == 2 and parts[0] == "faults":
            return self._fault(method, parts[1])
        if len(parts) == 3 and parts[0] == "topics" and parts[2] == "messages":
            if method != "GET":
                return _not_allowed(method, "GET")
            return self._messages(parts[1], query)
        return _error(404, f"no such path: {url.path} (see GET /health, /faults, /topics/{{topic}}/messages)")

    def _faults(self, method: str, body: bytes) -> Reply:
        if method == "GET":
            return Reply(200, self.faults.list())
        if method == "DELETE":
            return Reply(200, {"removed": self.faults.clear()})
        if method != "POST":
            return _not_allowed(method, "GET, POST, DELETE")
        try:
            spec = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            return _error(400, f"body is not JSON: {err}")
        if not isinstance(spec, dict):
            return _error(400, "body must be a JSON object (a fault rule)")
        try:
            fault_id = self.faults.add(spec)
        except FaultRuleError as err:
            return _error(400, str(err))
        return Reply(201, self.faults.get(fault_id))

    def _disk_full(self, method: str) -> Reply:
        if self.disk_full is None:
            return _error(404, "no broker in this process")
        if method not in ("GET", "POST", "DELETE"):
            return _not_allowed(method, "GET, POST, DELETE")
        on = {"GET": None, "POST": True, "DELETE": False}[method]
        before = self.disk_full(on)
        return Reply(200, {"diskFull": before if on is None else on})

    def _rewind(self, method: str, group: str, query: dict[str, list[str]]) -> Reply:
        from broker.service.rewind import RewindError

        if method != "POST":
            return _not_allowed(method, "POST")
        if self.rewind is None:
            return _error(404, "no broker in this process")
        topic = query.get("topic", [""])[-1]
        count = query.get("count", ["1"])[-1]
        if not topic:
            return _error(400, "topic: missing (?topic=T)")
        if not count.isdigit() or int(count) < 1:
            return _error(400, f"count: {count!r} is not a number of at least 1")
        try:
            offsets = self.rewind(group, topic, int(count))
        except RewindError as err:
            return _error(404, str(err))
        return Reply(200, {"offsets": {str(q): o for q, o in offsets.items()}})

    def _routes(self, method: str, broker_name: str | None) -> Reply:
        if self.withhold_route is None:
            return _error(404, "no NameServer in this process")
        if broker_name is None:
            if method != "GET":
                return _not_allowed(method, "GET")
            return Reply(200, {"withheld": self.withhold_route("", None)})
        if method not in ("POST", "DELETE"):
            return _not_allowed(method, "POST, DELETE")
        return Reply(200, {"withheld": self.withhold_route(broker_name, method == "DELETE")})

    def _fault(self, method: str, text: str) -> Reply:
        if not text.isdigit():
            return _error(404, f"no fault {text!r}: ids are numbers")
        fault_id = int(text)
        if method == "GET":
            found = self.faults.get(fault_id)
            return Reply(200, found) if found is not None else _error(404, f"no fault {fault_id}")
        if method == "DELETE":
            return Reply(204) if self.faults.remove(fault_id) else _error(404, f"no fault {fault_id}")
        return _not_allowed(method, "GET, DELETE")

    def _messages(self, topic: str, query: dict[str, list[str]]) -> Reply:
        store = self.store_of()
        if store is None:
            return _error(404, "no broker in this process")
        limit = _limit(query)
        if isinstance(limit, Reply):
            return limit
        return Reply(200, stored_messages(store, topic, limit))

    def _group(self, group: str, what: str, query: dict[str, list[str]]) -> Reply:
        controller = self.controller_of()
        if controller is None:
            return _error(404, "no broker in this process")
        if what == "offsets":
            try:
                return Reply(200, group_offsets(controller, group, query.get("topic", [None])[-1]))
            except UnknownGroupError as err:
                return _error(404, str(err))
        limit = _limit(query)
        if isinstance(limit, Reply):
            return limit
        read = retry_messages if what == "retry" else dlq_messages
        return Reply(200, read(controller, group, limit))


def _limit(query: dict[str, list[str]]) -> int | Reply:
    """The ``limit`` of a query (DEFAULT_LIMIT when absent), or the 400 reply for a bad one."""
    if "limit" not in query:
        return DEFAULT_LIMIT
    text = query["limit"][-1]
    if not text.isdigit() or not 0 < int(text) <= MAX_LIMIT:
        return _error(400, f"limit: {text!r} is not a number in 1..{MAX_LIMIT}")
    return int(text)


def _not_allowed(method: str, allowed: str) -> Reply:
    return _error(405, f"method {method} not allowed here (allowed: {allowed})")
