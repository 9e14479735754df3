"""bench.grpc.transport: py-spy stacks of the gRPC path sorted by layer and function, its case
selection, and a smoke run of the consumer and FIFO cases (the side-by-side's) at tiny sizes.

The stacks are shaped as py-spy 0.4 writes them (``--format raw``, root first): interpreted frames
``qualified name (path:line)`` with paths relative to their ``sys.path`` entry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.grpc import transport
from bench.side_by_side.servers import REPO

RUN = "run (trio/_core/_run.py:2300)"
RECEIVE = (RUN, "ConsumerActivity._answer_receive (broker/grpc/consumer.py:180)")
WRITER = (RUN, "ServerConnection._writer (gateway/transport/grpc/connection.py:50)")
RAW = "\n".join(
    [
        ";".join((*RECEIVE, "ConsumerActivity._with_handles (broker/grpc/consumer.py:320)")) + " 20",
        ";".join((*RECEIVE, "ConsumerActivity._with_handles (broker/grpc/consumer.py:325)")) + " 10",
        ";".join((*RECEIVE, "PopService.pop (broker/pop/service.py:100)")) + " 10",
        # the store beneath the POP service: the innermost layer wins
        ";".join(
            (
                *RECEIVE,
                "PopService.pop (broker/pop/service.py:110)",
                "MessageStore.get_message (store/message_store.py:200)",
            )
        )
        + " 20",
        ";".join(
            (
                *WRITER,
                "SocketStream.send_all (trio/_highlevel_socket.py:100)",
                "SocketType.send (trio/_socket.py:900)",
            )
        )
        + " 25",
        ";".join((RUN, "HeaderBlock.decode (gateway/transport/grpc/header_block.py:88)")) + " 15",
        # idle in epoll_wait: not CPU, left out of every share
        ";".join((RUN, "EpollIOManager.get_events (trio/_core/_io_epoll.py:245)")) + " 400",
        "garbage line",
    ]
)


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "tree-receive-0.txt"
    path.write_text(RAW + "\n")
    return path


def test_layer_shares_leave_epoll_waits_out_and_take_the_innermost_layer(profile: Path) -> None:
    assert transport.layer_shares(profile) == {
        "activity (broker/grpc)": pytest.approx(0.30),
        "socket / Trio": pytest.approx(0.25),
        "broker/store": pytest.approx(0.20),
        "HPACK": pytest.approx(0.15),
        "POP: receive, ack, checkpoints (broker/pop)": pytest.approx(0.10),
    }


def test_top_functions_by_own_samples_with_the_lines_of_a_function_summed(profile: Path) -> None:
    top = transport.top_functions(profile, 2)
    assert [function for function, _ in top] == [
        "ConsumerActivity._with_handles (broker/grpc/consumer.py)",
        "SocketType.send (trio/_socket.py)",
    ]
    assert [share for _, share in top] == pytest.approx([0.30, 0.25])


def test_top_functions_of_ours_count_a_socket_write_for_its_caller(profile: Path) -> None:
    top = transport.top_functions(profile, 3, ours_only=True)
    assert [function for function, _ in top] == [
        "ConsumerActivity._with_handles (broker/grpc/consumer.py)",
        "ServerConnection._writer (gateway/transport/grpc/connection.py)",
        "MessageStore.get_message (store/message_store.py)",
    ]
    assert [share for _, share in top] == pytest.approx([0.30, 0.25, 0.20])


def test_case_selection() -> None:
    assert transport.parse_args([]).cases == ["send1", "send16", "async", "fifo16", "receive", "push"]
    args = transport.parse_args(["--cases", "fifo16,push", "--backlog", "600", "--warmup-msgs", "100"])
    assert (args.cases, args.backlog, args.warmup_msgs) == (["fifo16", "push"], 600, 100)
    with pytest.raises(SystemExit):
        transport.parse_args(["--cases", "send1,pull"])
    with pytest.raises(SystemExit):
        transport.parse_args(["--backlog", "0"])


BACKLOG = 600
WARMUP_MSGS = 100
NEW_CASES = ("fifo16", "receive", "push")


@pytest.mark.slow
def test_smoke_run_of_the_fifo_and_consumer_cases(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    args = [sys.executable, "-m", "bench.grpc.transport", "--cases", ",".join(NEW_CASES)]
    args += ["--duration", "1", "--warmup", "0.3", "--warmup-msgs", str(WARMUP_MSGS)]
    args += ["--backlog", str(BACKLOG), "--json", str(results)]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {row["case"]: row for row in json.loads(results.read_text())}
    assert set(rows) == set(NEW_CASES)
    for case, row in rows.items():
        assert row["source"] == "tree"
        assert row["ok"] > 0, row
        assert row["failed"] == 0, row
        assert row["server_cpu_us_per_msg"] > 0, row
        assert row["load_before"], row
        assert row["load_after"], row
        assert f"tree       {case:7}" in done.stdout
    assert rows["fifo16"]["warmup_msgs"] >= WARMUP_MSGS
    assert rows["receive"]["warmup_msgs"] >= WARMUP_MSGS
    # The push consumer's window holds the backlog, after the warm-up's own messages.
    assert rows["push"]["ok"] >= BACKLOG
    assert rows["push"]["warmup_msgs"] == WARMUP_MSGS
    assert "age p50" in next(line for line in done.stdout.splitlines() if "push" in line)
