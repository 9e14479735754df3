"""Run ``rmqcompat.Scenario`` (``compat_tests/java/src/rmqcompat/Scenario.java``) with one real
RocketMQ Java client line and read back its events.

The program is compiled against each line by ``scripts/setup-java.sh`` into
``compat_tests/java/target/classes-<line>``. Each call starts one JVM that runs one command
(``produce``, ``consume``, ``litepull`` or ``pull``) against ``namesrv`` and prints one JSON object
per line on stdout; keyword arguments become ``key=value`` arguments (``keys_prefix`` ->
``keys-prefix``, booleans -> ``true``/``false``, ``None`` is left out).

Events (``"event"`` key):

* ``sent``: ``i, msgId, offsetMsgId, queueId, queueOffset, brokerName, status, tags, keys``, and
  ``body`` (text) or ``bodyLen`` + ``bodySha1`` for bodies over 1000 bytes; oneway sends give
  only ``i, tags, keys, body...``; batches add ``batchFirst``; ``selector-keys`` adds ``shardKey``.
* ``send_error``: ``i, error``.
* ``received``: ``msgId, offsetMsgId, uid, topic, queueId, queueOffset, tags, keys, body`` (or
  ``bodyLen`` + ``bodySha1``), ``props`` (user properties), ``sysProps``, ``reconsumeTimes``,
  ``bornTimestamp``, ``storeTimestamp``, ``delay``, ``flag``, ``sysFlag``, ``bornHost``,
  ``storeHost``, ``commitLogOffset``, ``storeSize``, ``status`` (``success``, ``later`` or
  ``suspend``: what the listener answered) and ``seen`` (deliveries of this ``uid`` so far).
  ``uid`` identifies a stored message across redeliveries: ``ORIGIN_MESSAGE_ID`` on retries, else
  ``offsetMsgId``; consumers count ``expect`` in distinct acknowledged uids. (``msgId`` is the
  UNIQ_KEY, which is not unique for 5.x batches: the 5.x client gives the batch its own
  UNIQ_KEY and the broker appends the batch's properties to every message in it.)
* ``pulled`` (pull command only, idle rounds left out): ``queueId, offset, status,
  nextBeginOffset, minOffset, maxOffset, count``.
* ``done``: producers ``sent, errors, complete``; consumers ``received`` (deliveries),
  ``distinct`` (uids), ``acked`` (uids acknowledged) and ``stopped`` (ended by SIGTERM).
* ``error``: ``error`` (and ``trace`` for exceptions); the exit status is then non-zero.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

JAVA_DIR = Path(__file__).resolve().parent / "java"
MAIN_CLASS = "rmqcompat.Scenario"
CLIENT_LINES = ("4.9.8", "5.3.3")
#: JVM options of the suite's Java programs (clients, mqadmin, the Spring and dashboard apps, the
#: reference NameServer): C1 only and the serial collector. Many short JVMs share the test machine's
#: two cores, and C2's compilations are most of a short JVM's CPU: ``mqadmin topicList`` took 2.1 s
#: of CPU with the defaults and 1.2 s with these. Benchmarks pass ``()`` to keep the defaults.
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: System properties of every scenario program's clients, on both targets. Consumers get a topic's
#: queues at a rebalance: at start, when the broker says the group changed, and on a timer, 20 s by
#: the clients' default (``RebalanceService``). A consumer that subscribes before its topic exists,
#: or that takes over a queue, waited for that timer; the request/reply and timer scenarios spent
#: most of their time so. 1 s here.
CLIENT_PROPERTIES = ("rocketmq.client.rebalance.waitInterval=1000",)
SHUTDOWN_GRACE_S = 30.0  # beyond the scenario's own timeout: JVM start-up and client shutdown
STDERR_TAIL = 4000

Event = dict[str, Any]
ArgValue = str | int | float | bool | None


class ScenarioError(RuntimeError):
    """The scenario exited non-zero or did not stop in time; carries what it reported."""

    def __init__(self, message: str, events: list[Event], stderr: str) -> None:
        super().__init__(f"{message}\n--- events (last 5) ---\n{events[-5:]}\n--- stderr tail ---\n{stderr}")
        self.events = events
        self.stderr = stderr


def classpath(line: str) -> str:
    classes = JAVA_DIR / "target" / f"classes-{line}"
    lib = JAVA_DIR / "target" / f"lib-{line}"
    if not (classes / "rmqcompat" / "Scenario.class").is_file():
        raise FileNotFoundError(f"{classes}: Scenario not compiled; run scripts/setup-java.sh")
    return f"{classes}{os.pathsep}{lib}/*"


def command_line(
    line: str,
    command: str,
    namesrv: str,
    home: Path,
    timeout: float,
    args: dict[str, ArgValue],
    *,
    main_class: str = MAIN_CLASS,
    heap_mb: int = 256,
    system_properties: tuple[str, ...] = (),
    jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
) -> list[str]:
    """The ``java`` command line of one scenario run; ``main_class`` names another program of
    ``compat_tests/java`` that speaks the same arguments and events (``rmqcompat.FilterScenario``,
    ``RequestReplyScenario``, ``TransactionScenario``); ``system_properties``: more ``key=value``
    JVM system properties (``tls.enable=true``)."""
    argv = [
        "java",
        "-Xms64m",
        f"-Xmx{heap_mb}m",
        *jvm_options,
        "-Dfile.encoding=UTF-8",
        f"-Duser.home={home}",
        f"-Drocketmq.client.logRoot={home / 'logs'}",
        "-Drocketmq.client.logLevel=INFO",
        *(f"-D{prop}" for prop in (*CLIENT_PROPERTIES, *system_properties)),
        "-cp",
        classpath(line),
        main_class,
        command,
        f"namesrv={namesrv}",
        f"timeout={timeout:g}",
    ]
    for key, value in args.items():
        if value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        argv.append(f"{key.replace('_', '-')}={text}")
    return argv


def java_env() -> dict[str, str]:
    """The JVM's environment: a UTF-8 locale, so non-ASCII arguments (keys, props) reach it intact
    (the JVM decodes its argv with the locale's charset, ``sun.jnu.encoding``)."""
    return {**os.environ, "LC_ALL": "C.UTF-8"}


def parse_events(stdout: str) -> list[Event]:
    """The JSON objects among ``stdout``'s lines (anything else is ignored)."""
    events: list[Event] = []
    for raw in stdout.splitlines():
        event = _parse(raw)
        if event is not None:
            events.append(event)
    return events


def _parse(raw: str) -> Event | None:
    raw = raw.strip()
    if not raw.startswith("{"):
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _tail(path: Path) -> str:
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - STDERR_TAIL))
        return f.read().decode("utf-8", errors="replace")


def _stderr_path(home: Path, command: str) -> Path:
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / f"scenario-{command}-{time.time_ns()}.stderr"


def run_scenario(
    line: str, command: str, namesrv: str, home: Path, timeout: float, **args: ArgValue
) -> list[Event]:
    """Run one scenario to completion and return its events; raises :class:`ScenarioError`."""
    return run_program(MAIN_CLASS, line, command, namesrv, home, timeout, args)


def run_program(
    main_class: str,
    line: str,
    command: str,
    namesrv: str,
    home: Path,
    timeout: float,
    args: dict[str, ArgValue],
    system_properties: tuple[str, ...] = (),
    jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
) -> list[Event]:
    """:func:`run_scenario` for another program of ``compat_tests/java`` (see :func:`command_line`)."""
    home.mkdir(parents=True, exist_ok=True)
    argv = command_line(
        line,
        command,
        namesrv,
        home,
        timeout,
        args,
        main_class=main_class,
        system_properties=system_properties,
        jvm_options=jvm_options,
    )
    stderr_path = _stderr_path(home, command)
    with stderr_path.open("wb") as err:
        try:
            result = subprocess.run(
                argv,
                stdout=subprocess.PIPE,
                stderr=err,
                env=java_env(),
                timeout=timeout + SHUTDOWN_GRACE_S,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode("utf-8", errors="replace") if e.stdout else ""
            raise ScenarioError(
                f"{command} ({line}) did not stop within {timeout + SHUTDOWN_GRACE_S:g} s",
                parse_events(out),
                _tail(stderr_path),
            ) from e
    events = parse_events(result.stdout.decode("utf-8", errors="replace"))
    if result.returncode != 0:
        shown = " ".join(argv[argv.index(main_class) + 1 :])
        raise ScenarioError(
            f"{command} ({line}) exited with {result.returncode}: {shown}",
            events,
            _tail(stderr_path),
        )
    return events


class ScenarioProcess:
    """A scenario running in the background; events are collected as they are printed."""

    def __init__(self, line: str, command: str, argv: list[str], stderr_path: Path, timeout: float) -> None:
        self.line = line
        self.command = command
        self.argv = argv
        self.timeout = timeout
        self.stderr_path = stderr_path
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._queue: queue.Queue[Event | None] = queue.Queue()
        with stderr_path.open("wb") as err:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=java_env()
            )
        assert self.proc.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.proc.stdout,), name=f"scenario-{command}", daemon=True
        )
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        try:
            for raw in stream:
                event = _parse(raw.decode("utf-8", errors="replace"))
                if event is not None:
                    with self._lock:
                        self._events.append(event)
                    self._queue.put(event)
        finally:
            self._queue.put(None)

    def events(self) -> list[Event]:
        """A snapshot of the events printed so far."""
        with self._lock:
            return list(self._events)

    def iter_events(self, timeout: float) -> Iterator[Event]:
        """Events as they arrive (each at most once across calls) until the output ends or ``timeout``."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self._queue.get(timeout=left)
            except queue.Empty:
                return
            if event is None:
                self._queue.put(None)  # keep the end marker for later calls
                return
            yield event

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float) -> Event:
        """The first event (already seen or new) for which ``predicate(event)`` is true."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events():
                if predicate(event):
                    return event
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise ScenarioError(f"{self.command} ({self.line}) ended first", self.events(), self.stderr)
            if time.monotonic() >= deadline:
                raise ScenarioError(f"no matching event within {timeout:g} s", self.events(), self.stderr)
            time.sleep(0.05)

    @property
    def stderr(self) -> str:
        return _tail(self.stderr_path)

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> list[Event]:
        """Wait for the scenario to exit (by default its own timeout plus a grace period) and return
        every event; raises :class:`ScenarioError` on a non-zero exit or when it does not stop."""
        limit = self.timeout + SHUTDOWN_GRACE_S if timeout is None else timeout
        try:
            code = self.proc.wait(limit)
        except subprocess.TimeoutExpired as e:
            self.stop()
            raise ScenarioError(
                f"{self.command} ({self.line}) did not stop within {limit:g} s", self.events(), self.stderr
            ) from e
        self._reader.join(10)
        if code != 0:
            raise ScenarioError(
                f"{self.command} ({self.line}) exited with {code}", self.events(), self.stderr
            )
        return self.events()

    def stop(self, grace: float = 10.0) -> list[Event]:
        """SIGTERM (then SIGKILL after ``grace``) and return the events; never raises for the exit."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(10)
        return self.events()


def start_scenario(
    line: str, command: str, namesrv: str, home: Path, timeout: float, **args: ArgValue
) -> ScenarioProcess:
    """Start one scenario in the background (see :class:`ScenarioProcess`)."""
    home.mkdir(parents=True, exist_ok=True)
    argv = command_line(line, command, namesrv, home, timeout, args)
    return ScenarioProcess(line, command, argv, _stderr_path(home, command), timeout)


def of(events: list[Event], name: str) -> list[Event]:
    """The events called ``name``."""
    return [e for e in events if e.get("event") == name]


def done(events: list[Event]) -> Event:
    """The last ``done`` event (raises ``LookupError`` when there is none)."""
    found = of(events, "done")
    if not found:
        raise LookupError("no done event")
    return found[-1]
