"""Where the golden-vector recorder and the benchmarks have always found the reference servers.

The launcher itself lives in :mod:`compat_tests.reference` (one module starts every real Java
server); these names stay importable from here.
"""

from __future__ import annotations

from compat_tests.reference import (
    BOOT_TIMEOUT_S,
    COMMIT_LOG_FILE_SIZE,
    STOP_TIMEOUT_S,
    ReferenceServers,
    free_port,
)

__all__ = ["BOOT_TIMEOUT_S", "COMMIT_LOG_FILE_SIZE", "STOP_TIMEOUT_S", "ReferenceServers", "free_port"]
