"""Java ``.properties`` text (``broker.conf``, ``namesrv.conf``, GET_*_CONFIG bodies): the subset
RocketMQ users write. Text in, a dict out; reading the file is the CLI's business.

``key=value``, ``key:value`` or ``key value`` per line; ``#`` and ``!`` start comments; a
trailing backslash continues a line; leading white space is ignored. Unicode escapes and
the other rarely used forms of ``java.util.Properties`` are read literally.
"""

from __future__ import annotations

import re

_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict (later keys win, as in Java)."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line = pending + line
        pending = ""
        parts = _SEPARATOR.split(line, maxsplit=1)
        props[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    if pending:
        parts = _SEPARATOR.split(pending, maxsplit=1)
        props[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return props


def format_properties(props: dict[str, str]) -> str:
    """Write properties as ``key=value`` lines (what GET_*_CONFIG bodies carry)."""
    return "".join(f"{key}={value}\n" for key, value in props.items())
