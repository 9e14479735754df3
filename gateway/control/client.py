"""A client of the control endpoint (:mod:`gateway.control.api`) for another process: the
container fixture and ``rmq-gateway fault``. Standard library only (``http.client``).

::

    control = ControlClient("127.0.0.1:9080")
    fault_id = control.add_fault(request="SEND_MESSAGE_V2", respond=2, times=2)
    control.faults()                       # [{"id": 1, ..., "fired": 0, "active": True}]
    control.stored_messages("T", wait_for=3, timeout_s=10)
"""

from __future__ import annotations

import builtins
import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from gateway.transport.address import split_address

DEFAULT_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.05  # how often a waiting reader looks again


def wait_for_count(
    read: Callable[[], list[dict[str, Any]]], wait_for: int, timeout_s: float, what: str
) -> list[dict[str, Any]]:
    """``read()`` again until it returns at least ``wait_for`` items; raises ``TimeoutError``
    (naming how many of ``what`` there were) when that takes over ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = read()
        if len(found) >= wait_for:
            return found
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{len(found)} of {wait_for} {what} after {timeout_s:g} s")
        time.sleep(POLL_INTERVAL_S)


def wait_for_lag(
    read: Callable[[], dict[str, Any]],
    group: str,
    max_lag: int | None,
    timeout_s: float,
    unknown: Callable[[Exception], bool],
) -> dict[str, Any]:
    """``read()`` (a group's offsets with their total ``"lag"``) again until the lag is at most
    ``max_lag`` (None: once). An error for which ``unknown(err)`` holds (the group is not known
    yet) is retried while waiting. Raises ``TimeoutError`` naming the last lag when that takes
    over ``timeout_s``, and ``read``'s other errors at once (an unknown group's after the
    deadline, or at once when not waiting)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            offsets = read()
        except Exception as err:
            if not unknown(err) or max_lag is None or time.monotonic() >= deadline:
                raise
        else:
            if max_lag is None or offsets["lag"] <= max_lag:
                return offsets
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"lag of {group} is {offsets['lag']}, not at most {max_lag}, after {timeout_s:g} s"
                )
        time.sleep(POLL_INTERVAL_S)


class ControlError(RuntimeError):
    """The endpoint refused a request (``status``, and its ``{"error": ...}`` message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"control endpoint answered {status}: {message}")
        self.status = status
        self.message = message


class ControlClient:
    """Calls the control endpoint at ``address`` (``host:port``)."""

    def __init__(self, address: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.host, self.port = split_address(address)
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """``(status, JSON value or None)``; raises OSError when the endpoint cannot be reached."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        return response.status, json.loads(raw) if raw else None

    def _call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200,)) -> Any:
        status, value = self.request(method, path, body)
        if status not in ok:
            message = value.get("error", value) if isinstance(value, dict) else value
            raise ControlError(status, str(message))
        return value

    def add_fault(self, rule: dict[str, Any] | None = None, **spec: Any) -> int:
        """Add a rule (its JSON form, or that form as keywords) and return its id; raises
        :class:`ControlError` (400) for a malformed one."""
        created = self._call("POST", "/faults", {**(rule or {}), **spec}, ok=(201,))
        return int(created["id"])

    def faults(self) -> list[dict[str, Any]]:
        """Every rule with ``id``, ``fired`` and ``active``."""
        return list(self._call("GET", "/faults"))

    def remove_fault(self, fault_id: int) -> bool:
        """Remove one rule; False when there was none of that id."""
        status, _ = self.request("DELETE", f"/faults/{fault_id}")
        return status == 204

    def clear_faults(self) -> int:
        """Remove every rule; returns how many there were."""
        return int(self._call("DELETE", "/faults")["removed"])

    def stored_messages(
        self, topic: str, *, wait_for: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The stored messages of ``topic``, once there are at least ``wait_for`` of them; raises
        ``TimeoutError`` (with how many there were) when that takes over ``timeout_s``."""
        path = f"/topics/{quote(topic, safe='')}/messages"
        return self._wait_for_count(path, limit, wait_for, timeout_s, f"messages of {topic} stored")

    def group_offsets(
        self,
        group: str,
        topic: str | None = None,
        *,
        max_lag: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """``GET /groups/{group}/offsets``, once the group's total lag is at most ``max_lag``
        (None: at once); raises ``TimeoutError`` when it is not within ``timeout_s`` and
        :class:`ControlError` (404) for a group the broker does not know."""
        path = f"/groups/{quote(group, safe='')}/offsets"
        if topic is not None:
            path += f"?topic={quote(topic, safe='')}"
        return wait_for_lag(
            lambda: dict(self._call("GET", path)),
            group,
            max_lag,
            timeout_s,
            lambda err: isinstance(err, ControlError) and err.status == 404,
        )

    def retry_messages(
        self, group: str, *, wait_for: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """``GET /groups/{group}/retry``, once there are at least ``wait_for``."""
        path = f"/groups/{quote(group, safe='')}/retry"
        return self._wait_for_count(path, limit, wait_for, timeout_s, f"retries of {group}")

    def dlq_messages(
        self, group: str, *, wait_for: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """``GET /groups/{group}/dlq``, once there are at least ``wait_for``."""
        path = f"/groups/{quote(group, safe='')}/dlq"
        return self._wait_for_count(path, limit, wait_for, timeout_s, f"dead letters of {group}")

    def _wait_for_count(
        self, path: str, limit: int | None, wait_for: int, timeout_s: float, what: str
    ) -> list[dict[str, Any]]:
        if limit is not None:
            path += f"?limit={limit}"
        return wait_for_count(lambda: list(self._call("GET", path)), wait_for, timeout_s, what)

    def reset(self) -> dict[str, int]:
        """Empty the gateway (``POST /reset``); returns what went, by kind."""
        return dict(self._call("POST", "/reset"))

    def disk_full(self, on: bool = True) -> bool:
        """``POST`` / ``DELETE /broker/disk-full``: refuse writes as on a full disk, or stop; the
        state now."""
        return bool(self._call("POST" if on else "DELETE", "/broker/disk-full")["diskFull"])

    def disk_full_state(self) -> bool:
        """``GET /broker/disk-full``: whether writes are refused as on a full disk."""
        return bool(self._call("GET", "/broker/disk-full")["diskFull"])

    def rewind(self, group: str, topic: str, count: int = 1) -> dict[int, int]:
        """``POST /groups/{group}/rewind``: deliver the group's last ``count`` messages of each
        queue of ``topic`` again; the new offset of each queue."""
        path = f"/groups/{quote(group, safe='')}/rewind?topic={quote(topic, safe='')}&count={count}"
        return {int(q): int(o) for q, o in self._call("POST", path)["offsets"].items()}

    def withhold_route(self, broker_name: str, on: bool = True) -> list[str]:
        """``DELETE`` / ``POST /routes/brokers/{name}``: take a broker out of the NameServer's
        routes, or put it back; the names withheld now."""
        answer = self._call("DELETE" if on else "POST", f"/routes/brokers/{quote(broker_name, safe='')}")
        return [str(name) for name in answer["withheld"]]

    def withheld_routes(self) -> list[str]:
        """``GET /routes/brokers``: the brokers out of the NameServer's routes."""
        return [str(name) for name in self._call("GET", "/routes/brokers")["withheld"]]

    def health(self) -> bool:
        return self.request("GET", "/health")[0] == 200


class RemoteFaults:
    """The fault rules of a gateway in another process, with the methods of
    :class:`gateway.transport.faults.FaultTable` (``add``, ``remove``, ``clear``, ``list``)."""

    def __init__(self, client: ControlClient) -> None:
        self.client = client

    def add(self, rule: dict[str, Any] | None = None, **spec: Any) -> int:
        return self.client.add_fault(rule, **spec)

    def remove(self, fault_id: int) -> bool:
        return self.client.remove_fault(fault_id)

    def clear(self) -> int:
        return self.client.clear_faults()

    def list(self) -> builtins.list[dict[str, Any]]:
        return self.client.faults()
