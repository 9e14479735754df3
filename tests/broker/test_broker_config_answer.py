"""GET_BROKER_CONFIG answers the 5.3.3 broker's key set (no key of ours alone) with rocketmqHome
set; compat_tests/test_topic_fidelity_compat.py compares the key set with the real broker's."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.processors.broker_status import java_defaults
from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from codec.java_properties import parse_properties
from tests.broker.helpers import running_broker

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("home", [None, "/opt/rocketmq"])
async def test_broker_config_has_javas_keys_and_a_rocketmq_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str | None
) -> None:
    if home is None:
        monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    else:
        monkeypatch.setenv("ROCKETMQ_HOME", home)
    async with running_broker(tmp_path) as (_app, conn):
        response = await conn.invoke(RemotingCommand(code=RequestCode.GET_BROKER_CONFIG), 3)
    assert response.code == ResponseCode.SUCCESS
    props = parse_properties(response.body.decode())
    assert set(props) == set(java_defaults())
    assert "preallocate" not in props
    assert props["rocketmqHome"] == (home or str(REPO))
