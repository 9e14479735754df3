"""The HTTP control endpoint: what a client that gets the protocol wrong sees (a clear 4xx in
JSON, never a traceback), and the contract of docs/testing-with-gateway.md on a served table."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from gateway.control.api import ControlApi, Reply
from gateway.control.server import MAX_BODY_BYTES, MAX_HEAD_BYTES, ControlConfig, ControlServer
from gateway.transport.address import split_address
from gateway.transport.faults import FaultTable


async def _exchange(address: str, raw: bytes) -> tuple[int, dict[str, str], Any]:
    """Send ``raw`` and read the whole reply: (status, headers, JSON body or None)."""
    host, port = split_address(address)
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        await stream.send_all(raw)
        data = b""
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert int(headers["content-length"]) == len(body)
    return int(lines[0].split(" ")[1]), headers, json.loads(body) if body else None


def _request(method: str, path: str, body: bytes | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
    if body is not None:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


@pytest.fixture
async def served(nursery: trio.Nursery) -> tuple[str, FaultTable]:
    table = FaultTable(trio.sleep)
    server = await ControlServer.bind(ControlApi(table, lambda: None), ControlConfig("127.0.0.1", 0))
    address: str = await nursery.start(server.run)
    return address, table


async def test_rules_are_added_listed_and_removed(served: tuple[str, FaultTable]) -> None:
    address, table = served
    rule = {"request": "SEND_MESSAGE_V2", "respond": 2, "remark": "busy", "times": 2, "topic": "T"}
    status, headers, created = await _exchange(
        address, _request("POST", "/faults", json.dumps(rule).encode())
    )
    assert status == 201
    assert headers["content-type"].startswith("application/json")
    assert created == {"id": 1, **rule, "target": "broker", "fired": 0, "active": True}
    assert table.point("broker").rules[0].rule.remark == "busy"
    assert (await _exchange(address, _request("GET", "/faults")))[2] == [created]
    assert (await _exchange(address, _request("GET", "/faults/1")))[2] == created
    assert (await _exchange(address, _request("DELETE", "/faults/1")))[:3:2] == (204, None)
    assert (await _exchange(address, _request("DELETE", "/faults/1")))[0] == 404
    await _exchange(address, _request("POST", "/faults", b'{"request": 11, "drop": true}'))
    assert (await _exchange(address, _request("DELETE", "/faults")))[2] == {"removed": 1}
    assert table.list() == []
    assert (await _exchange(address, _request("GET", "/health")))[:3:2] == (200, {"status": "ok"})


@pytest.mark.parametrize(
    ("raw", "status", "message"),
    [
        (_request("POST", "/faults", b"{bad"), 400, "body is not JSON"),
        (_request("POST", "/faults", b"[1, 2]"), 400, "body must be a JSON object"),
        (_request("POST", "/faults", b"\xff\xfe"), 400, "body is not JSON"),
        (
            _request("POST", "/faults", b'{"request": "SEND_MESAGE_V2", "respond": 2}'),
            400,
            "unknown RequestCode name 'SEND_MESAGE_V2'",
        ),
        (_request("POST", "/faults", b'{"request": "PULL_MESSAGE"}'), 400, "needs respond, close, drop"),
        (_request("GET", "/nowhere"), 404, "no such path: /nowhere"),
        (_request("GET", "/faults/abc"), 404, "ids are numbers"),
        (_request("GET", "/faults/7"), 404, "no fault 7"),
        (_request("GET", "/topics/T/messages"), 404, "no broker in this process"),
        (_request("PUT", "/faults", b"{}"), 405, "method PUT not allowed"),
        (b"POST /faults HTTP/1.1\r\nHost: x\r\n\r\n", 411, "Content-Length required"),
        (
            f"POST /faults HTTP/1.1\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode(),
            413,
            "over the limit",
        ),
        (b"GET /faults HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", 431, "request head over"),
        (b"POST /faults HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "chunked"),
        (b"hello there\r\n\r\n", 400, "malformed request line"),
        (b"GET /faults HTTP/1.1\r\nno colon here\r\n\r\n", 400, "malformed header line"),
        (b"POST /faults HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "bad Content-Length"),
    ],
)
async def test_bad_requests_get_a_clear_json_error(
    served: tuple[str, FaultTable], raw: bytes, status: int, message: str
) -> None:
    address, _table = served
    got, _headers, body = await _exchange(address, raw)
    assert got == status
    assert message in body["error"]


async def test_a_bug_in_a_route_is_a_500_without_a_traceback(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(ControlApi):
        def handle(self, method: str, target: str, body: bytes) -> Reply:
            raise KeyError("secret detail")

    server = await ControlServer.bind(Broken(FaultTable(), lambda: None), ControlConfig("127.0.0.1", 0))
    address = await nursery.start(server.run)
    status, _headers, body = await _exchange(address, _request("GET", "/faults"))
    assert (status, body) == (500, {"error": "internal error: KeyError"})
    assert [r.levelname for r in caplog.records if "failed" in r.getMessage()] == ["ERROR"]


async def test_a_request_cut_short_is_answered_400(served: tuple[str, FaultTable]) -> None:
    address, _table = served
    host, port = split_address(address)
    stream = await trio.open_tcp_stream(host, port)
    async with stream:
        await stream.send_all(b"POST /faults HTTP/1.1\r\nContent-Length: 50\r\n\r\n{")
        await stream.send_eof()
        data = b""
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                data += chunk
    assert data.startswith(b"HTTP/1.1 400 ")
    assert b"connection closed after 1 of 50 body bytes" in data
