"""Request dispatch: from a request code to a typed handler, and every error to a response.

This module is Trio-free so that ``namesrv/`` and ``broker/`` processors, and their tests, need
no event loop to run a synchronous handler. Mirrors ``NettyRemotingAbstract.processRequestCommand``:

* an unknown code gets ``REQUEST_CODE_NOT_SUPPORTED`` with Java's remark;
* a malformed header (:class:`HeaderError`) or any other :class:`RocketMQError` becomes a response
  with the error's ``response_code``, its message as remark and its ``ext_fields`` as header: this
  is the one place where processors' errors turn into responses (logged, rate-limited);
* any other exception becomes ``SYSTEM_ERROR`` with the exception as remark, and is logged;
* a oneway request never gets a response, not even an error;
* a ``guard`` (the broker's authentication and authorization, Java's ``RequestPipeline``) runs
  before the header is decoded and the handler called; what it raises is answered as above. It
  runs for an unknown code too, before the ``REQUEST_CODE_NOT_SUPPORTED`` answer: the broker
  registers ``AdminBrokerProcessor`` as its default processor, so on the Java broker every code
  reaches ``buildProcessRequestHandler`` and its pipeline, and an unsigned request is refused
  whatever its code.

Handlers are ``handler(ctx, request, header)`` where ``header`` is the request's typed header
when the route names a header type, else ``None``. They may be plain functions (returning the
response or ``None``), coroutine functions, for the few that must wait (long polling, broker
to client calls), or plain functions that return an awaitable only when they must wait (a send
under ``SYNC_FLUSH``) and the response otherwise.

:meth:`Dispatcher.dispatch_nowait` runs a request as far as it goes without waiting: the
connection answers what completes there inline, in its reader, and starts a task only for what
must wait (a task per request costs more than most handlers). :meth:`Dispatcher.dispatch`
is the same, awaited to the end. ``observers`` are told of every answered request with its time.

``faults`` (a :class:`gateway.transport.faults.FaultPoint`, given by the composition) makes a
matching request get an injected answer, a late one, none, or a closed connection instead of its
handler's; see :mod:`gateway.transport.faults`. Without rules a request pays one attribute check.
"""

from __future__ import annotations

import inspect
import logging
import time
import typing
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from codec.codes import ResponseCode, request_code_name
from codec.command import RemotingCommand
from codec.errors import RocketMQError
from codec.headers.base import CustomHeader
from gateway.transport.faults import Fault, FaultPoint

logger = logging.getLogger(__name__)

REFUSAL_LOG_INTERVAL_S = 10.0  # at most one INFO line per (request code, error code) this often
HandlerResult = RemotingCommand | None
Handler = Callable[["RequestContext", RemotingCommand, Any], HandlerResult | Awaitable[HandlerResult]]
#: What :meth:`Dispatcher.dispatch_nowait` hands back when the handler must wait: await it.
Waiting = Coroutine[Any, Any, HandlerResult]
#: Told of every request answered: (its context, request, response or None, milliseconds it took).
DispatchObserver = Callable[["RequestContext", RemotingCommand, HandlerResult, float], None]
#: Checks a request before its handler (``NettyRemotingAbstract``'s request pipeline); raises
#: :class:`RocketMQError` to refuse it.
Guard = Callable[["RequestContext", RemotingCommand], None]


class Peer(Protocol):
    """What a handler may do with the connection a request came on (implemented in gateway)."""

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send a request to the peer and wait for its response; raises on timeout or disconnect."""

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send a request that expects no answer."""

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        """Queue a request that expects no answer without waiting; ``False`` if it was not queued."""

    def close(self) -> None:
        """Close the connection."""

    @property
    def closed(self) -> bool:
        """Whether the connection has closed (Netty's ``!isActive``)."""

    @property
    def writable(self) -> bool:
        """Whether its outbox has room (Netty's ``isWritable``)."""


class ConnectionInfo:
    """Identity of one client connection, shared by every request that arrives on it.

    ``client_id`` is filled in by the broker's heartbeat handling; ``attributes`` holds whatever a
    component needs to remember per connection.
    """

    __slots__ = ("attributes", "client_id", "id", "language", "local_addr", "peer", "remote_addr", "version")

    def __init__(self, conn_id: int, remote_addr: str, local_addr: str, peer: Peer | None = None) -> None:
        self.id = conn_id
        self.remote_addr = remote_addr
        self.local_addr = local_addr
        self.peer = peer
        self.client_id: str | None = None
        self.language = 0
        self.version = 0
        self.attributes: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<conn {self.id} {self.remote_addr}>"


class RequestContext:
    """What a handler knows about the request beyond the command itself.

    ``suspended`` is set by a handler that parks the request until data arrives (long polling), as
    Java's ``RemotingCommand.setSuspended``: observers label its time with it.
    """

    __slots__ = ("connection", "suspended")

    def __init__(self, connection: ConnectionInfo) -> None:
        self.connection = connection
        self.suspended = False


class Dispatcher:
    """Maps request codes to handlers; see the module docstring for the error rules."""

    def __init__(
        self, name: str = "dispatcher", guard: Guard | None = None, faults: FaultPoint | None = None
    ) -> None:
        self.name = name
        self.guard = guard
        self.faults = faults
        self._routes: dict[int, tuple[Handler, type[CustomHeader] | None, bool]] = {}
        self.requests = 0
        self.errors = 0
        self._last_refusal_log: dict[tuple[int, int], float] = {}
        self.observers: list[DispatchObserver] = []

    def register(self, code: int, handler: Handler, header_type: type[CustomHeader] | None = None) -> None:
        if code in self._routes:
            raise ValueError(f"{self.name}: code {code} registered twice")
        is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        self._routes[code] = (handler, header_type, is_async)

    async def dispatch(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """Run the handler of ``request`` and return the response to send (``None``: send nothing)."""
        outcome = self.dispatch_nowait(ctx, request)
        if outcome is None or isinstance(outcome, RemotingCommand):
            return outcome
        return await outcome

    def dispatch_nowait(self, ctx: RequestContext, request: RemotingCommand) -> HandlerResult | Waiting:
        """Run the handler of ``request`` up to its first wait: the response to send (``None``:
        send nothing) when it completed, else a coroutine to await for it."""
        self.requests += 1
        start = time.perf_counter() if self.observers else 0.0
        route = self._routes.get(request.code)
        if route is None:
            refusal = self.guard_refusal(ctx, request)
            if refusal is not None:
                return self._done(ctx, request, refusal, start)
            self._log_unsupported(ctx, request.code)
            response = request.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
            )
            return self._done(ctx, request, response, start)
        handler, header_type, is_async = route
        try:
            if self.guard is not None:
                self.guard(ctx, request)
            header = header_type.from_ext_fields(request.ext_fields) if header_type else None
            if self.faults is not None and self.faults.rules:
                fault = self.faults.match(request.code, header, ctx.connection)
                if fault is not None:
                    return self._inject(ctx, request, header, fault, start)
        except Exception as err:
            return self._done(ctx, request, self._error_response(ctx, request, err), start)
        return self._call(ctx, request, header, handler, is_async, start)

    def _call(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: Any,
        handler: Handler,
        is_async: bool,
        start: float,
    ) -> HandlerResult | Waiting:
        """The handler's answer: done here when it needs no waiting, else the awaitable of it."""
        try:
            result = handler(ctx, request, header)
        except Exception as err:
            return self._done(ctx, request, self._error_response(ctx, request, err), start)
        if not is_async and (result is None or isinstance(result, RemotingCommand)):
            return self._done(ctx, request, result, start)
        return self._finish(ctx, request, typing.cast(Awaitable[HandlerResult], result), start)

    def _inject(
        self, ctx: RequestContext, request: RemotingCommand, header: Any, fault: Fault, start: float
    ) -> HandlerResult | Waiting:
        """What a fired fault makes of ``request``: at once, or after its delay."""
        if fault.rule.delay_ms and self.faults is not None and self.faults.sleep is not None:
            return self._delayed(ctx, request, header, fault, self.faults.sleep, start)
        return self._injected(ctx, request, header, fault, start)

    async def _delayed(
        self,
        ctx: RequestContext,
        request: RemotingCommand,
        header: Any,
        fault: Fault,
        sleep: Callable[[float], Awaitable[None]],
        start: float,
    ) -> HandlerResult:
        await sleep(fault.delay_s)
        outcome = self._injected(ctx, request, header, fault, start)
        if outcome is None or isinstance(outcome, RemotingCommand):
            return outcome
        return await outcome

    def _injected(
        self, ctx: RequestContext, request: RemotingCommand, header: Any, fault: Fault, start: float
    ) -> HandlerResult | Waiting:
        """The fault's answer (``respond``), none (``drop``), a closed connection (``close``), or,
        for a delay alone, the handler's own."""
        rule = fault.rule
        if rule.respond is not None:
            return self._done(ctx, request, request.make_response(rule.respond, fault.remark), start)
        if rule.close or rule.drop:
            if rule.close and ctx.connection.peer is not None:
                ctx.connection.peer.close()
            return self._done(ctx, request, None, start)
        handler, _header_type, is_async = self._routes[request.code]
        return self._call(ctx, request, header, handler, is_async, start)

    def guard_refusal(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """The guard's refusal of ``request``, or ``None`` when it passes (or there is no guard)."""
        if self.guard is None:
            return None
        try:
            self.guard(ctx, request)
        except Exception as err:
            return self._error_response(ctx, request, err)
        return None

    async def _finish(
        self, ctx: RequestContext, request: RemotingCommand, waiting: Awaitable[HandlerResult], start: float
    ) -> HandlerResult:
        try:
            response = await waiting
        except Exception as err:
            response = self._error_response(ctx, request, err)
        return self._done(ctx, request, response, start)

    def _done(
        self, ctx: RequestContext, request: RemotingCommand, response: HandlerResult, start: float
    ) -> HandlerResult:
        if request.is_oneway:
            response = None
        if self.observers:
            elapsed_ms = (time.perf_counter() - start) * 1000
            for observer in self.observers:
                observer(ctx, request, response, elapsed_ms)
        return response

    def _error_response(
        self, ctx: RequestContext, request: RemotingCommand, err: Exception
    ) -> RemotingCommand:
        """The answer to a handler's exception (see the module docstring)."""
        self.errors += 1
        if isinstance(err, RocketMQError):
            self._log_refusal(ctx, request, err)
            return request.make_response(err.response_code, err.remark, header=err.ext_fields)
        logger.error(
            "%s: %s from %s raised",
            self.name,
            request_code_name(request.code),
            ctx.connection,
            exc_info=err,
        )
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"{type(err).__name__}: {err}")

    def _log_refusal(self, ctx: RequestContext, request: RemotingCommand, err: RocketMQError) -> None:
        """One INFO line per request code and error code every ``REFUSAL_LOG_INTERVAL_S``; the
        rest at DEBUG, so a client repeating a bad request cannot flood the log."""
        key = (request.code, err.response_code)
        now = time.monotonic()
        level = logging.DEBUG
        if now - self._last_refusal_log.get(key, -REFUSAL_LOG_INTERVAL_S) >= REFUSAL_LOG_INTERVAL_S:
            self._last_refusal_log[key] = now
            level = logging.INFO
        logger.log(
            level,
            "%s: %s from %s refused (code %d): %s",
            self.name,
            request_code_name(request.code),
            ctx.connection,
            err.response_code,
            err,
        )

    def _log_unsupported(self, ctx: RequestContext, code: int) -> None:
        """One INFO line per unknown request code and connection, naming the code, so an operator
        sees what a client asked for without a client repeating it flooding the log."""
        seen: set[int] = ctx.connection.attributes.setdefault("unsupported_codes", set())
        if code not in seen:
            seen.add(code)
            logger.info(
                "%s: %s (%d) from %s not supported", self.name, request_code_name(code), code, ctx.connection
            )

    def statistics(self) -> dict[str, int]:
        return {"routes": len(self._routes), "requests": self.requests, "errors": self.errors}
