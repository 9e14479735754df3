"""Long fault runs, beyond what the test command does: ``python -m bench.fault``.

* ``--kills N`` (default 100): the ``kill -9`` loop of ``tests/fault/test_kill9.py`` with N
  SIGKILLs under SYNC_FLUSH and four concurrent senders; every acknowledged message is pulled back
  after each restart.
* ``--fuzz N`` (default 1,000,000): the frames of ``tests/fault/test_wire_fuzz.py`` at both ports of
  one gateway subprocess, N frames in all, from seeded recipes (``--seed``) instead of Hypothesis
  (same builders, no per-example overhead); a fresh client sends and pulls every 50 connections,
  RSS is sampled, and ERROR lines and tracebacks in the gateway's log are counted.

Prints one line per run with its figures and exits non-zero on a lost message, a dead or
unresponsive gateway, a traceback or an RSS above the ceiling. Bounded: N is the bound; a run of
the defaults takes about 10 minutes (kills) and 10 minutes (fuzz) on the 2-core CI machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from tests.fault.kill_loop import run_kill_loop
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, pull_bodies, send_one
from tests.fault.wire_fuzz import _REAL_CODES, JSON_SHAPE, LIE, REQUEST, build_frame, throw

RSS_CEILING_BYTES = 512 * 1024 * 1024
LIVENESS_EVERY = 50  # connections
STORE_CONF = {"mappedFileSizeCommitLog": str(64 * 1024 * 1024), "fileReservedTime": "1"}


def _alive(gw: GatewayProcess, n: int) -> int:
    if not gw.alive():
        raise SystemExit(f"gateway died: {gw.log_tail()}")
    with BlockingClient(gw.broker_addr) as client:
        queue, offset = send_one(client, "FuzzLive", f"live-{n}".encode())
        if pull_bodies(client, "FuzzLive", queue, offset)[:1] != [f"live-{n}".encode()]:
            raise SystemExit("liveness: the message just sent was not pulled back")
    with BlockingClient(gw.namesrv_addr) as client:
        route = client.invoke(
            RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": "FuzzLive"}), 10
        )
        if route.code != ResponseCode.SUCCESS:
            raise SystemExit(f"liveness: no route ({route.remark})")
    return gw.rss_bytes()


def fuzz(total: int, seed: int) -> bool:
    rng = random.Random(seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fault-fuzz-") as tmp:
        gw = GatewayProcess(Path(tmp), STORE_CONF)
        gw.start()
        try:
            frames_sent = connections = 0
            peak = _alive(gw, 0)
            while frames_sent < total:
                recipes = [
                    (
                        REQUEST,
                        rng.choice(_REAL_CODES) if rng.randrange(4) else rng.randrange(-(2**15), 2**15),
                        rng.randrange(2**32),
                    )
                    for _ in range(rng.randint(20, 80))
                ]
                if rng.randrange(2):
                    recipes.append(
                        (rng.choice((JSON_SHAPE, LIE)), rng.choice(_REAL_CODES), rng.randrange(2**32))
                    )
                frames = [build_frame(r) for r in recipes]
                throw(gw.broker_addr if rng.randrange(2) else gw.namesrv_addr, frames)
                frames_sent += len(frames)
                connections += 1
                if connections % LIVENESS_EVERY == 0:
                    peak = max(peak, _alive(gw, connections))
            peak = max(peak, _alive(gw, connections), gw.peak_rss_bytes())
            errors, tracebacks = len(gw.error_lines()), gw.traceback_count()
        finally:
            gw.stop()
    ok = errors == 0 and tracebacks == 0 and peak < RSS_CEILING_BYTES
    print(
        f"fuzz: {frames_sent} frames on {connections} connections (seed {seed}) in "
        f"{time.monotonic() - started:.0f} s: 0 crashes, RSS peak {peak / 2**20:.0f} MiB, "
        f"{errors} ERROR lines, {tracebacks} tracebacks -> {'ok' if ok else 'FAILED'}"
    )
    return ok


def kills(cycles: int, seed: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="fault-kill-") as tmp:
        result = run_kill_loop(Path(tmp), cycles, senders=4, seed=seed)
    restart = sorted(result.restart_s)
    print(
        f"kill -9: {result.cycles} cycles under SYNC_FLUSH (seed {seed}) in {result.elapsed_s:.0f} s: "
        f"{result.acknowledged} acknowledged, {len(result.lost)} lost, restart median "
        f"{restart[len(restart) // 2]:.2f} s, max {restart[-1]:.2f} s"
    )
    return not result.lost and result.cycles == cycles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fault", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="kill -9 cycles (0: skip)")
    parser.add_argument("--fuzz", type=int, default=1_000_000, help="fuzzed frames (0: skip)")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed)")
    args = parser.parse_args(argv)
    ok = True
    if args.kills:
        ok &= kills(args.kills, args.seed)
    if args.fuzz:
        ok &= fuzz(args.fuzz, args.seed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
