"""The accept discipline every server here shares: the remoting ports and the gRPC port.

:class:`Acceptor` runs one accept loop per listener and hands each connection to the server's
handler in the server's nursery, counting the connections still being served. Errors from
``accept`` are handled as trio's ``serve_listeners`` does: when the process or the system is out
of file descriptors or buffer memory, the loop logs it, pauses ``ACCEPT_PAUSE_S`` and tries again,
since connections closing meanwhile free what the next accept needs; any other error means the
listener is broken and ends the loop (and the server) with it, instead of a loop that logs the
same failure forever. (``trio.SocketListener.accept`` already retries the errors that concern
only the one connection being accepted, such as ``ECONNABORTED``.) Beyond ``max_connections``
a new connection is closed at once (the remoting server's limit; grpc-java has none, the gRPC
endpoint takes the same default). Both kinds of line go through a
:class:`~gateway.transport.log_limit.LogLimiter`: one per kind every 10 s, not one per attempt.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable

import trio

from gateway.transport.log_limit import LogLimiter

logger = logging.getLogger(__name__)

# accept(2) errors that mean "out of resources for now" (trio's ACCEPT_CAPACITY_ERRNOS).
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_PAUSE_S = 0.1  # as trio.serve_listeners

ConnectionHandler = Callable[[trio.SocketStream], Awaitable[None]]


class Acceptor:
    """Accepts on listeners for one server named ``name``; see the module docstring."""

    def __init__(self, name: str, max_connections: int, log: logging.Logger = logger) -> None:
        self.name = name
        self.max_connections = max_connections
        self.log = LogLimiter(log)
        self.open = 0  # accepted, handler not yet returned (TLS sniffing included)
        self.accepted = 0
        self.refused = 0  # closed at once: max_connections were open
        self.accept_pauses = 0  # accepts that failed for lack of resources, each followed by a pause

    async def run(
        self, listener: trio.SocketListener, handle: ConnectionHandler, nursery: trio.Nursery
    ) -> None:
        """Accept on ``listener`` until cancelled; each connection runs ``handle`` in ``nursery``."""
        while True:
            try:
                stream = await listener.accept()
            except OSError as err:
                if err.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise
                self.accept_pauses += 1
                self.log.error(
                    ("accept", err.errno),
                    "%s: accept failed with %s (%s), %d connections open; retrying in %s s",
                    self.name, errno.errorcode[err.errno], os.strerror(err.errno), self.open, ACCEPT_PAUSE_S,
                )  # fmt: skip
                await trio.sleep(ACCEPT_PAUSE_S)
                continue
            if self.open >= self.max_connections:
                self.refused += 1
                self.log.warning("refused", "%s: refusing connection, %d open", self.name, self.open)
                await trio.aclose_forcefully(stream)
                continue
            self.accepted += 1
            self.open += 1
            nursery.start_soon(self._serve, handle, stream)

    async def _serve(self, handle: ConnectionHandler, stream: trio.SocketStream) -> None:
        try:
            await handle(stream)
        finally:
            self.open -= 1

    def statistics(self) -> dict[str, int]:
        return {
            "accepted": self.accepted,
            "refused": self.refused,
            "accept_pauses": self.accept_pauses,
        }
