"""The cold-data flow control tables of a broker (``ColdDataCgCtrService``).

Java keeps, per consumer group, an administrator's cold-read threshold (``cgColdThresholdMapConfig``,
set by ``updateColdDataFlowCtrGroupConfig`` and cleared by ``removeColdDataFlowCtrGroupConfig``) and
the bytes each group has read from disk lately (``cgColdThresholdMapRuntime``), and throttles a group
whose reads pass its threshold when ``coldDataFlowControlEnable`` is on. This store has no page-cache
residency to measure, so nothing is ever counted as a cold read: the runtime table stays empty and
the global accumulator at 0, while the configured thresholds are kept and shown exactly as Java's
``getColdDataFlowCtrInfo`` shows them.
"""

from __future__ import annotations

import re
from typing import Any

CG_COLD_READ_THRESHOLD = 3 * 1024 * 1024  # BrokerConfig.cgColdReadThreshold, bytes
GLOBAL_COLD_READ_THRESHOLD = 100 * 1024 * 1024  # BrokerConfig.globalColdReadThreshold, bytes

_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def java_long(text: str) -> int | None:
    """``Long.valueOf(text)``, or ``None`` where Java throws ``NumberFormatException``."""
    if not _JAVA_LONG.fullmatch(text):
        return None
    value = int(text)
    return value if _LONG_MIN <= value <= _LONG_MAX else None


class ColdDataFlowControl:
    """``ColdDataCgCtrService``'s tables and its ``getColdDataFlowCtrInfo`` view."""

    def __init__(
        self,
        cg_cold_read_threshold: int = CG_COLD_READ_THRESHOLD,
        global_cold_read_threshold: int = GLOBAL_COLD_READ_THRESHOLD,
    ) -> None:
        self.cg_cold_read_threshold = cg_cold_read_threshold
        self.global_cold_read_threshold = global_cold_read_threshold
        self.config_table: dict[str, int] = {}  # cgColdThresholdMapConfig: group -> bytes
        self.runtime_table: dict[str, dict[str, int]] = {}  # cgColdThresholdMapRuntime
        self.global_acc = 0  # GLOBAL_ACC

    def add_or_update_group_config(self, group: str, threshold: int) -> None:
        self.config_table[group] = threshold

    def remove_group_config(self, group: str) -> None:
        self.config_table.pop(group, None)

    def info(self) -> dict[str, Any]:
        """The object ``getColdDataFlowCtrInfo`` serializes, keys in fastjson's order."""
        return {
            "runtimeTable": dict(self.runtime_table),
            "configTable": dict(self.config_table),
            "cgColdReadThreshold": self.cg_cold_read_threshold,
            "globalColdReadThreshold": self.global_cold_read_threshold,
            "globalAcc": self.global_acc,
        }
