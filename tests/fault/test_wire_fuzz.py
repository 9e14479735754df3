"""The wire fuzzer of the fault suite: hostile frames at both ports of a gateway
subprocess (:mod:`tests.fault.wire_fuzz`), with liveness checked as it goes (a fresh client still
sends and pulls, the NameServer still routes), the server's RSS under a ceiling, and no traceback
in its log. Bounded: ``FUZZ_EXAMPLES`` connections of 20 to 81 frames each."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from codec.codes import RequestCode, ResponseCode
from codec.command import RemotingCommand
from tests.fault.process import GatewayProcess
from tests.fault.wire import BlockingClient, pull_bodies, send_one
from tests.fault.wire_fuzz import build_frame, connection_recipe, throw

logger = logging.getLogger(__name__)

FUZZ_EXAMPLES = int(os.environ.get("FAULT_FUZZ_EXAMPLES", "1500"))  # connections
MIN_INPUTS = int(os.environ.get("FAULT_FUZZ_MIN_INPUTS", "50000"))
LIVENESS_EVERY = 50  # connections between liveness checks
RSS_CEILING_BYTES = 512 * 1024 * 1024  # the gateway idles near 60 MiB; 4 MiB bodies come and go
MAX_ERROR_LINES = 0
STORE_CONF = {
    "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 30_000),
    "maxHashSlotNum": "4096",
    "maxIndexNum": "16384",
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    process = GatewayProcess(tmp_path_factory.mktemp("fuzz"), STORE_CONF)
    process.start()
    try:
        yield process
    finally:
        process.stop()


class Tally:
    inputs = 0
    connections = 0
    peak_rss = 0
    live_checks = 0
    started = 0.0


def _check_alive(gw: GatewayProcess) -> None:
    assert gw.alive(), gw.log_tail()
    body = f"live-{Tally.live_checks}".encode()
    with BlockingClient(gw.broker_addr) as client:
        queue, offset = send_one(client, "FuzzLive", body)
        assert pull_bodies(client, "FuzzLive", queue, offset)[:1] == [body]
    with BlockingClient(gw.namesrv_addr) as client:
        route = client.invoke(
            RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields={"topic": "FuzzLive"}), 10
        )
        assert route.code == ResponseCode.SUCCESS, route.remark
    rss = gw.rss_bytes()
    Tally.peak_rss = max(Tally.peak_rss, rss)
    assert rss < RSS_CEILING_BYTES, f"gateway RSS {rss} bytes"
    Tally.live_checks += 1


@pytest.mark.slow
def test_fuzzed_frames_on_both_ports_never_take_the_gateway_down(gateway: GatewayProcess) -> None:
    Tally.started = time.monotonic()
    _check_alive(gateway)

    @settings(
        max_examples=FUZZ_EXAMPLES,
        phases=[Phase.generate],  # bounded: no shrinking, no replay database
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(connection=connection_recipe, to_broker=st.booleans())
    def fuzz(
        connection: tuple[list[tuple[int, int, int]], tuple[int, int, int] | None], to_broker: bool
    ) -> None:
        requests, last = connection
        frames = [build_frame(r) for r in requests] + ([build_frame(last)] if last else [])
        throw(gateway.broker_addr if to_broker else gateway.namesrv_addr, frames)
        Tally.inputs += len(frames)
        Tally.connections += 1
        if Tally.connections % LIVENESS_EVERY == 0:
            _check_alive(gateway)

    fuzz()
    _check_alive(gateway)
    elapsed = time.monotonic() - Tally.started
    peak = gateway.peak_rss_bytes()
    errors = gateway.error_lines()
    print(
        f"\nwire fuzz: {Tally.inputs} frames on {Tally.connections} connections in {elapsed:.0f} s, "
        f"{Tally.live_checks} liveness checks, RSS peak {peak / 2**20:.0f} MiB, "
        f"{len(errors)} ERROR lines, {gateway.traceback_count()} tracebacks"
    )
    assert Tally.inputs >= MIN_INPUTS
    assert gateway.traceback_count() == 0, gateway.log_tail(60)
    assert len(errors) <= MAX_ERROR_LINES, "\n".join(errors[:20])
    assert peak < RSS_CEILING_BYTES
