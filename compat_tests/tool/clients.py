"""Starting the unmodified client programs of ``compat_tests`` against the target of a
:class:`Context`: the remoting scenario programs (``rmqcompat.*``, key=value arguments, JSON events;
see ``compat_tests/scenario.py``), the gRPC Java programs (``rmqgrpc.*``, positional arguments,
outcome lines), the Python gRPC programs (``compat_tests/grpc_python_*.py``) and the Go gRPC program
(``compat_tests/grpc_go``, ``-flag=value`` arguments, JSON events).

Every program gets the scenario's remaining time as its limit and is killed after it.
"""

from __future__ import annotations

import importlib.util
import sys

from compat_tests.tool.javaenv import JVM_OPTIONS
from compat_tests.tool.model import Context, NotRun
from compat_tests.tool.process import Background, Finished

GRACE_S = 25.0  # beyond a program's own deadline: JVM start-up and client shutdown
PYTHON_GRPC_HINT = "needs the Python gRPC client: pip install 'rocketmq-gateway[compat]'"
# The client programs that sign their requests with the target's keys (the others send unsigned,
# which a cluster with ACL 2.0 on refuses: their rows are then "not run").
SIGNING_REMOTING = ("rmqcompat.AuthScenario",)
SIGNING_GRPC = ("Produce", "Consume")
TLS_GRPC = ("Produce", "Transact")  # the others connect in plaintext


def _unsigned(ctx: Context, program: str, signing: tuple[str, ...]) -> None:
    if ctx.target.access_key and program not in signing:
        raise NotRun(f"{program} does not sign its requests (with --access-key: the ACL rows, mqadmin, gRPC)")


def line_of(client: str) -> str:
    """``java-4.9.8`` -> ``4.9.8``."""
    return client.removeprefix("java-")


def _credentials(ctx: Context) -> list[str]:
    if ctx.target.access_key and ctx.target.secret_key:
        return [f"ak={ctx.target.access_key}", f"sk={ctx.target.secret_key}"]
    return []


def remoting_argv(
    ctx: Context, client: str, main_class: str, command: str, args: dict[str, object]
) -> list[str]:
    """The ``java`` command line of one ``rmqcompat`` program run against the target."""
    _unsigned(ctx, main_class, SIGNING_REMOTING)
    line = line_of(client)
    classpath = ctx.java.remoting(line)
    budget = max(5.0, ctx.remaining() - GRACE_S)
    argv = [ctx.java.java(), *JVM_OPTIONS, f"-Duser.home={ctx.home}"]
    argv += [f"-Drocketmq.client.logRoot={ctx.home / 'logs'}"]
    if ctx.target.tls:
        argv += ["-Dtls.enable=true", "-Dtls.test.mode.enable=true"]  # trusts any certificate
    argv += ["-cp", classpath, main_class, command, f"namesrv={ctx.target.namesrv}", f"timeout={budget:g}"]
    for key, value in args.items():
        if value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        argv.append(f"{key.replace('_', '-')}={text}")
    if main_class == "rmqcompat.AuthScenario":
        argv += _credentials(ctx)
    return argv


def start_remoting(
    ctx: Context, client: str, command: str, main_class: str = "rmqcompat.Scenario", /, **args: object
) -> Background:
    return ctx.track(Background(remoting_argv(ctx, client, main_class, command, args), ctx.home / "out"))


def remoting(
    ctx: Context, client: str, command: str, main_class: str = "rmqcompat.Scenario", /, **args: object
) -> Finished:
    """Run one remoting program to its end (or its limit) and return its output."""
    return start_remoting(ctx, client, command, main_class, **args).finish(ctx.remaining())


def grpc_endpoint(ctx: Context) -> str:
    if not ctx.target.grpc:
        raise NotRun("no endpoint (give --grpc HOST:PORT)")
    return ctx.target.grpc


def grpc_java(ctx: Context, program: str, *args: str) -> Finished:
    """Run ``rmqgrpc.<program>`` (rocketmq-client-java 5.0.8) with positional ``args``."""
    endpoint = grpc_endpoint(ctx)
    _unsigned(ctx, program, SIGNING_GRPC)
    if ctx.target.tls and program not in TLS_GRPC:
        raise NotRun(f"rmqgrpc.{program} connects without TLS")
    classpath = ctx.java.grpc()
    argv = [ctx.java.java(), *JVM_OPTIONS, f"-Duser.home={ctx.home}"]
    if ctx.target.access_key and ctx.target.secret_key:
        argv += [
            f"-Drmqgrpc.accessKey={ctx.target.access_key}",
            f"-Drmqgrpc.secretKey={ctx.target.secret_key}",
        ]
    argv += ["-cp", classpath, f"rmqgrpc.{program}", endpoint, *args]
    return ctx.track(Background(argv, ctx.home / "out")).finish(ctx.remaining())


def grpc_python(ctx: Context, module: str, *args: str) -> Finished:
    """Run ``compat_tests.<module>`` (rocketmq-python-client) in its own interpreter."""
    endpoint = grpc_endpoint(ctx)
    if importlib.util.find_spec("rocketmq") is None:
        raise NotRun(PYTHON_GRPC_HINT)
    if ctx.target.tls:
        raise NotRun("the Python gRPC client's TLS trusts only the system's roots")
    env = {}
    if ctx.target.access_key and ctx.target.secret_key:
        env = {"RMQ_ACCESS_KEY": ctx.target.access_key, "RMQ_SECRET_KEY": ctx.target.secret_key}
    argv = [sys.executable, "-m", f"compat_tests.{module}", endpoint, *args]
    return ctx.track(Background(argv, ctx.home / "out", env)).finish(ctx.remaining())


def grpc_go(ctx: Context, mode: str, **flags: object) -> Finished:
    """Run the Go client program (rocketmq-clients/golang/v5) in ``mode`` with ``-key=value``
    flags; TLS (trusting any certificate, the client's own test mode) exactly when ``--tls``."""
    endpoint = grpc_endpoint(ctx)
    _unsigned(ctx, "the Go client program", ())
    binary = ctx.go.grpc()
    argv = [str(binary), f"-endpoint={endpoint}", f"-tls={str(ctx.target.tls).lower()}", f"-mode={mode}"]
    argv += [f"-{key}={value}" for key, value in flags.items()]
    env = {"HOME": str(ctx.home)}  # the client writes its log under ~/logs/rocketmq
    return ctx.track(Background(argv, ctx.home / "out", env)).finish(ctx.remaining())
