"""``mqadmin`` subcommands run in one JVM: ``MqadminBatch``, a single-file Java program calling
``MQAdminStartup.main0`` once per line of its input, compiled once per test session.

A JVM start with rocketmq-tools costs seconds on a loaded 2-core machine; a suite that runs a
dozen subcommands in a row (operations, ACL set-up, trace queries) pays it once this way.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from compat_tests.reference import REFERENCE_LIB, REFERENCE_LIBS
from compat_tests.scenario import TEST_JVM_OPTIONS

BATCH_TIMEOUT_S = 300.0

BATCH_SOURCE = r"""
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Runs mqadmin subcommands in one JVM: one per stdin line, tab-separated, the first field a name. */
public final class MqadminBatch {
    public static void main(String[] argv) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        System.setOut(out);
        System.setErr(out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\t");
            out.println();
            out.println("@@@BEGIN " + parts[0]);
            try {
                org.apache.rocketmq.tools.command.MQAdminStartup.main0(
                    java.util.Arrays.copyOfRange(parts, 1, parts.length), null);
            } catch (Throwable t) {
                t.printStackTrace(out);
            }
            out.println();
            out.println("@@@END " + parts[0]);
        }
        System.exit(0);
    }
}
"""


TRANSIENT = ("RemotingTimeoutException", "RemotingConnectException", "RemotingSendRequestException")
BATCH_RETRIES = 2  # a shared CI machine can stall a JVM past mqadmin's 3-5 s request timeouts
_compiled: dict[str, Path] = {}
_compile_lock = threading.Lock()


def batch_classes(workdir: Path) -> Path:
    """``MqadminBatch`` compiled once per test session."""
    with _compile_lock:
        if "dir" not in _compiled:
            out = workdir / "mqadmin-batch"
            out.mkdir(parents=True, exist_ok=True)
            source = out / "MqadminBatch.java"
            source.write_text(BATCH_SOURCE)
            subprocess.run(
                ["javac", "-nowarn", "-d", str(out), "-cp", f"{REFERENCE_LIB}/*", str(source)],
                check=True,
                capture_output=True,
                timeout=BATCH_TIMEOUT_S,
            )
            _compiled["dir"] = out
        return _compiled["dir"]


def _run_batch(
    namesrv: str, commands: dict[str, list[str]], home: Path, rocketmq_home: Path | None, version: str
) -> dict[str, str]:
    stdin = "".join("\t".join([name, *args, "-n", namesrv]) + "\n" for name, args in commands.items())
    classes = batch_classes(home.parent)
    result = subprocess.run(
        [
            "java",
            "-Xmx256m",
            *TEST_JVM_OPTIONS,
            f"-Duser.home={home}",
            *([f"-Drocketmq.home.dir={rocketmq_home}"] if rocketmq_home is not None else []),
            "-cp",
            f"{classes}:{REFERENCE_LIBS[version]}/*",
            "MqadminBatch",
        ],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=home,  # consumerStatus writes its running-info files into the working directory
        timeout=BATCH_TIMEOUT_S,
        check=False,
    )
    outputs: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in result.stdout.splitlines():
        if line.startswith("@@@BEGIN "):
            current, lines = line[len("@@@BEGIN ") :], []
        elif line.startswith("@@@END ") and current is not None:
            outputs[current] = "\n".join(lines)
            current = None
        elif current is not None and line.strip() and " |-" not in line and "logback" not in line:
            lines.append(line)
    missing = set(commands) - set(outputs)
    assert not missing, f"batch ended early ({result.returncode}): {missing}\n{result.stdout[-3000:]}"
    return outputs


def mqadmin_batch(
    namesrv: str,
    commands: dict[str, list[str]],
    home: Path,
    rocketmq_home: Path | None = None,
    version: str = "5.3.3",
) -> dict[str, str]:
    """Run ``commands`` (name -> mqadmin arguments) in one JVM, in order; returns each one's output.
    Commands that failed on a client-side timeout are run again (at most ``BATCH_RETRIES`` times).

    ``rocketmq_home``: the ``rocketmq.home.dir`` whose ``conf/tools.yml`` signs every request
    (``MQAdminStartup.main0`` reads it when given no hook), as with ``run_mqadmin``; ``version``:
    the rocketmq-tools run (the batch program is compiled once, against 5.3.3's).
    """
    outputs = _run_batch(namesrv, commands, home, rocketmq_home, version)
    for _ in range(BATCH_RETRIES):
        again = {n: a for n, a in commands.items() if any(t in outputs[n] for t in TRANSIENT)}
        if not again:
            break
        outputs.update(_run_batch(namesrv, again, home, rocketmq_home, version))
    return outputs
