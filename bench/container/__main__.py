"""Cold start of the gateway as a test tool: the container image, and a fresh clone's ``scripts/run``.

``python -m bench.container`` measures, one after the other:

* the image (``rmq-gateway:local``, built by ``scripts/setup-docker.sh``): ``--starts`` times
  (20 by default) a new container of :class:`gateway.testing.container.RocketMQGatewayContainer`
  from ``docker run`` to protocol-ready (the NameServer answers a route lookup and the broker has
  registered: :mod:`gateway.testing.probe`), then stopped and removed; median, p95, min, max;
* a fresh clone (``--clone``): ``git clone`` of this checkout's HEAD into a temporary directory,
  then its ``scripts/run`` (virtualenv, the runtime dependencies from pip's cache, the gRPC
  classes generated, the hot path's compile started in the background) to its ``ready: `` line.
  The gateway runs with a temporary HOME (pip keeps this user's cache; ``--cold-pip-cache``: an
  empty one, as on a fresh machine, so every dependency is downloaded); once it is ready it is
  stopped, and so are the background jobs (the compile; every process whose working directory is
  in the clone), so the machine is left as it was;
* Docker's own floor on this machine: as many ``docker run`` of the same image with ``true`` as
  its command (create, start, exit, no Python), timed the same way through the Docker API.

The load average is printed before and after, with the other processes' CPU share while it ran.
``--out PREFIX`` writes ``PREFIX.json`` and ``PREFIX.md``. Bounded: each start has a timeout,
the clone's run at most ``--clone-timeout`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.container.procs import busy_cores, kill_under, machine, summary

REPO = Path(__file__).resolve().parents[2]
READY = re.compile(r"ready: (.*)")


def container_starts(count: int, image: str) -> list[float]:
    """Seconds from ``docker run`` to protocol-ready, one per start."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from gateway.testing.container import RocketMQGatewayContainer

    times = []
    for i in range(count):
        container = RocketMQGatewayContainer(image)
        began = time.monotonic()
        container.start()
        try:
            times.append(time.monotonic() - began)
        finally:
            container.stop()
        print(f"  start {i + 1}/{count}: {times[-1]:.2f} s", flush=True)
    return times


def docker_floor(count: int, image: str) -> list[float]:
    """Seconds of ``docker run`` of ``image`` with ``true`` as its command, to its exit, each removed."""
    from testcontainers.core.docker_client import DockerClient

    client = DockerClient().client  # docker-py's client, as RocketMQGatewayContainer uses it
    times = []
    for _ in range(count):
        began = time.monotonic()
        container = client.containers.create(image, entrypoint=["true"], network_mode="host")
        container.start()
        container.wait()
        times.append(time.monotonic() - began)
        container.remove(v=True, force=True)
    return times


def fresh_clone_run(timeout_s: float, *, cold_pip_cache: bool = False) -> dict[str, Any]:
    """Clone HEAD, run its ``scripts/run`` on free ports to ``ready``; the seconds of each step."""
    with tempfile.TemporaryDirectory(prefix="rmq-clone-") as tmp:
        clone = Path(tmp) / "rocketmq-gateway"
        began = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
        cloned = time.monotonic() - began
        home = Path(tmp) / "home"
        home.mkdir()
        pip_cache = Path(tmp) / "pip-cache" if cold_pip_cache else Path.home() / ".cache" / "pip"
        env = {**os.environ, "HOME": str(home), "PIP_CACHE_DIR": str(pip_cache)}
        env.pop("RMQ_GATEWAY_PURE", None)  # as a user runs it: the compile starts in the background
        env.pop("VIRTUAL_ENV", None)
        argv = [
            "scripts/run",
            "--namesrv-port",
            "0",
            "--broker-port",
            "0",
            "--store",
            str(Path(tmp) / "data"),
        ]
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=clone, env=env, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        ready_s = None
        lines = []
        try:
            deadline = started + timeout_s
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line:
                    break
                lines.append(line.rstrip())
                if READY.search(line):
                    ready_s = time.monotonic() - started
                    break
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            stopped = kill_under(clone)
        if ready_s is None:
            tail = "\n".join(lines[-20:])
            raise RuntimeError(f"scripts/run did not say ready within {timeout_s:g} s:\n{tail}")
        return {
            "clone_s": round(cloned, 3),
            "run_to_ready_s": round(ready_s, 3),
            "pip_cache": "cold" if cold_pip_cache else "warm",
            "background_processes_stopped": stopped,
            "setup_lines": [line for line in lines if line.startswith("setup:")],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.container", description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=20, help="container starts (default 20)")
    parser.add_argument("--image", default=os.environ.get("RMQ_GATEWAY_IMAGE", "rmq-gateway:local"))
    parser.add_argument("--clone", action="store_true", help="also time a fresh clone's scripts/run")
    parser.add_argument(
        "--cold-pip-cache", action="store_true", help="the clone's pip starts with an empty cache"
    )
    parser.add_argument("--clone-timeout", type=float, default=900.0, help="seconds (default 900)")
    parser.add_argument("--out", metavar="PREFIX", help="write PREFIX.json and PREFIX.md")
    args = parser.parse_args(argv)
    if args.starts < 1:
        parser.error("--starts must be at least 1")
    before = machine()
    print(f"load average before: {' '.join(before['loadavg'])}", flush=True)
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "before": before}
    print(f"container cold start to protocol-ready, {args.starts} starts of {args.image}:", flush=True)
    times = container_starts(args.starts, args.image)
    result["container"] = {"image": args.image, "starts_s": [round(t, 3) for t in times], **summary(times)}
    print(f"docker's floor, {args.starts} runs of {args.image} with `true`:", flush=True)
    floor = docker_floor(args.starts, args.image)
    result["docker_floor"] = {"starts_s": [round(t, 3) for t in floor], **summary(floor)}
    if args.clone:
        print("fresh clone, scripts/run to ready:", flush=True)
        result["fresh_clone"] = fresh_clone_run(args.clone_timeout, cold_pip_cache=args.cold_pip_cache)
    result["after"] = machine()
    result["head"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.strip()
    text = report(result)
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(result, indent=1) + "\n")
        Path(f"{args.out}.md").write_text(text + "\n")
    return 0


def report(result: dict[str, Any]) -> str:
    c = result["container"]
    before, after = result["before"], result["after"]
    lines = [
        f"## Container and fresh-clone cold start, {result['date']}",
        "",
        f"Machine: {before['cores']} cores; load average {' '.join(before['loadavg'])} before, "
        f"{' '.join(after['loadavg'])} after; {busy_cores(before, after):.2f} cores busy on average while "
        f"it ran (every process, the bench's and Docker's included). Ours: {result['head']}.",
        "",
        "| measurement | median | p95 | min | max | n |",
        "|---|---|---|---|---|---|",
        f"| container `docker run` to protocol-ready (s) | {c['median']:.2f} | {c['p95']:.2f} | "
        f"{c['min']:.2f} | {c['max']:.2f} | {c['n']} |",
    ]
    floor = result.get("docker_floor")
    if floor is not None:
        lines.append(
            f"| Docker's floor: `docker run` of the image with `true` to its exit (s) | "
            f"{floor['median']:.2f} | {floor['p95']:.2f} | {floor['min']:.2f} | {floor['max']:.2f} | "
            f"{floor['n']} |"
        )
    clone = result.get("fresh_clone")
    if clone is not None:
        lines += [
            f"| fresh clone: `git clone` (s) | {clone['clone_s']:.2f} | | | | 1 |",
            f"| fresh clone: `scripts/run` to `ready`, {clone.get('pip_cache', 'warm')} pip cache (s) | "
            f"{clone['run_to_ready_s']:.2f} | | | | 1 |",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
