"""The cold-data and store-tuning requests of ``mqadmin`` (``AdminBrokerProcessor`` 5.3.3) against an
in-process broker: cold read thresholds set and removed per group and shown by
GET_COLD_DATA_FLOW_CTR_INFO, the commit log's read-ahead mode with Java's checks and remarks, and a
master's RESET_MASTER_FLUSH_OFFSET. (The same through the real ``mqadmin`` beside the real broker:
compat_tests/test_cold_data_admin_compat.py.)"""

from __future__ import annotations

from pathlib import Path

from broker.cold_data import ColdDataFlowControl, java_long
from codec import fastjson
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.headers.base import EmptyHeader
from codec.java_properties import parse_properties
from gateway.transport.connection import Connection
from tests.broker.helpers import running_broker


def request(code: int, body: bytes | None = None, fields: dict[str, str] | None = None) -> RemotingCommand:
    cmd = RemotingCommand.request(code, EmptyHeader(), body=body or b"")
    if fields is not None:
        cmd.ext_fields = fields
    return cmd


async def cold_info(conn: Connection) -> dict[str, object]:
    resp = await conn.invoke(request(RequestCode.GET_COLD_DATA_FLOW_CTR_INFO), 5)
    assert resp.code == ResponseCode.SUCCESS
    info: dict[str, object] = fastjson.loads(resp.body)
    return info


async def test_cold_read_thresholds_are_set_shown_and_removed(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        body = b"cg_a=1048576\ncg_b=not-a-long\ncg_c=+7\n"
        resp = await conn.invoke(request(RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG, body), 5)
        assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
        info = await cold_info(conn)
        assert info == {
            "runtimeTable": {},
            "configTable": {"cg_a": 1048576, "cg_c": 7},
            "cgColdReadThreshold": 3145728,
            "globalColdReadThreshold": 104857600,
            "globalAcc": 0,
        }
        resp = await conn.invoke(request(RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG, b"cg_a"), 5)
        assert resp.code == ResponseCode.SUCCESS
        resp = await conn.invoke(request(RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG, b"unknown"), 5)
        assert resp.code == ResponseCode.SUCCESS
        assert (await cold_info(conn))["configTable"] == {"cg_c": 7}


async def test_commit_log_read_ahead_mode_checks_and_remarks(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (_app, conn):
        code = RequestCode.SET_COMMITLOG_READ_MODE
        param = "set commitlog readahead mode param"
        cases = [
            ({}, ResponseCode.SYSTEM_ERROR, f"{param} error"),
            ({"other": "1"}, ResponseCode.SYSTEM_ERROR, "set commitlog readahead mode failed"),
            ({"READ_AHEAD_MODE": "x"}, ResponseCode.SYSTEM_ERROR, "set commitlog readahead mode failed"),
            ({"READ_AHEAD_MODE": "2"}, ResponseCode.INVALID_PARAMETER, f"{param} value error"),
            ({"READ_AHEAD_MODE": "1"}, ResponseCode.SUCCESS, "set commitlog readahead mode success, mode: 1"),
        ]  # fmt: skip
        for fields, want_code, want_remark in cases:
            resp = await conn.invoke(request(code, fields=fields), 5)
            assert (resp.code, resp.remark) == (want_code, want_remark), fields
        config = await conn.invoke(request(RequestCode.GET_BROKER_CONFIG), 5)
        assert parse_properties(config.body.decode())["dataReadAheadEnable"] == "false"
        resp = await conn.invoke(request(code, fields={"READ_AHEAD_MODE": "0"}), 5)
        assert resp.remark == "set commitlog readahead mode success, mode: 0"
        config = await conn.invoke(request(RequestCode.GET_BROKER_CONFIG), 5)
        assert parse_properties(config.body.decode())["dataReadAheadEnable"] == "true"


async def test_a_master_accepts_reset_master_flush_offset_and_changes_nothing(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (app, conn):
        before = app.controller.store.max_phy_offset
        resp = await conn.invoke(
            request(RequestCode.RESET_MASTER_FLUSH_OFFSET, fields={"masterFlushOffset": "99"}), 5
        )
        assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
        assert app.controller.store.max_phy_offset == before


def test_java_long_parses_as_long_value_of() -> None:
    assert [java_long(t) for t in ("12", "-3", "+4", "9223372036854775807")] == [12, -3, 4, 2**63 - 1]
    assert [java_long(t) for t in ("", " 1", "1.0", "9223372036854775808", "1_0")] == [None] * 5
    cold = ColdDataFlowControl()
    cold.add_or_update_group_config("g", 5)
    cold.remove_group_config("absent")
    assert cold.info()["configTable"] == {"g": 5}
