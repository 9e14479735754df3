"""The body of GET_BROKER_HA_STATUS (``HARuntimeInfo``), built in one place for every role.

Mirrors ``org.apache.rocketmq.remoting.protocol.body.HARuntimeInfo`` and its
``HAClientRuntimeInfo``, as ``DefaultHAService.getRuntimeInfo`` (a master) and
``DefaultHAClient``'s side (a slave) fill them; the keys are sorted as fastjson writes them. A
master reports its slaves' connections and an idle client part; a slave its client part and no
connections. No Trio here: the admin processor answers with it for a broker without replication.
"""

from __future__ import annotations

from typing import Any


def client_runtime_info(
    *, last_read_ms: int = 0, last_write_ms: int = 0, max_offset: int = 0, transferred_per_s: int = 0
) -> dict[str, Any]:
    """``HAClientRuntimeInfo``; a master's is all zeros (its client is never activated)."""
    return {
        "isActivated": False,
        "lastReadTimestamp": last_read_ms,
        "lastWriteTimestamp": last_write_ms,
        "masterFlushOffset": 0,
        "maxOffset": max_offset,
        "transferredByteInSecond": transferred_per_s,
    }


def master_runtime_info(max_offset: int, connections: list[dict[str, Any]]) -> dict[str, Any]:
    """A master's ``HARuntimeInfo``: ``connections`` are its slaves' ``HAConnectionRuntimeInfo``
    (each with its ``inSync`` flag), ``max_offset`` its commit log's maximum offset."""
    return {
        "haClientRuntimeInfo": client_runtime_info(),
        "haConnectionInfo": connections,
        "inSyncSlaveNums": sum(1 for c in connections if c["inSync"]),
        "master": True,
        "masterCommitLogMaxOffset": max_offset,
    }


def slave_runtime_info(client: dict[str, Any]) -> dict[str, Any]:
    """A slave's ``HARuntimeInfo``: its ``client`` part and nothing of a master's."""
    return {
        "haClientRuntimeInfo": client,
        "haConnectionInfo": [],
        "inSyncSlaveNums": 0,
        "master": False,
        "masterCommitLogMaxOffset": 0,
    }
