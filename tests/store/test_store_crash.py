"""Crash safety: a SYNC_FLUSH writer killed with SIGKILL at random moments loses nothing it
acknowledged, and recovery never serves a torn record.

The writer (:func:`writer_main`, run as a subprocess) prints ``round index queue_offset`` for each
message only after ``flush_up_to`` returned for it. Each round kills it after a random delay,
reopens the store in this process (abnormal recovery, since the abort file is left behind) and
checks the whole queue.
"""

from __future__ import annotations

import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from codec.message import MessageRecord, iter_records
from store.message_store import MessageStore
from store.results import GetMessageStatus
from tests.store.helpers import small_config

ROUNDS = 4
TOPIC = "Crash"
STARTUP_S = 60.0  # the writer's first acknowledgement, at the latest

WRITER = """
import sys
from pathlib import Path
from codec.message import MessageRecord
from store.message_store import MessageStore
from tests.store.helpers import small_config

root, round_no = Path(sys.argv[1]), int(sys.argv[2])
store = MessageStore(small_config(root, flushDiskType="SYNC_FLUSH")).open()
i = 0
while True:
    body = f"round {round_no} message {i} ".encode() * (1 + i % 40)
    result = store.put_message(MessageRecord(topic="Crash", queue_id=0, body=body))
    assert result.append_result is not None, result
    store.flush_up_to(result.append_result.end_offset)
    print(round_no, i, result.append_result.logics_offset, flush=True)
    i += 1
"""


def first_line(proc: subprocess.Popen[str], seconds: float) -> str:
    """The writer's first acknowledgement line, waited for up to ``seconds``."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, f"the writer acknowledged nothing within {seconds} s"
    line = proc.stdout.readline()
    assert line.endswith("\n"), f"the writer exited before its first acknowledgement: {line!r}"
    return line


def read_all(store: MessageStore) -> list[MessageRecord]:
    out: list[MessageRecord] = []
    offset = 0
    while True:
        got = store.get_message(TOPIC, 0, offset, 32, 1 << 30)
        if got.status is not GetMessageStatus.FOUND:
            return out
        out += list(iter_records(got.body()))  # raises if anything served is torn
        offset = got.next_begin_offset


def test_sigkill_under_sync_flush_loses_no_acknowledged_message(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    repo = Path(__file__).resolve().parents[2]
    acked: list[tuple[int, int, int]] = []
    for round_no in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(round_no)],
            stdout=subprocess.PIPE,
            cwd=repo,
            text=True,
        )
        first = first_line(proc, STARTUP_S)  # a loaded machine can take seconds to start Python
        time.sleep(0.05 + rng.random())
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=10)
        out = first + rest
        complete = out.split("\n")[:-1]  # a line cut by the kill was not an acknowledgement
        lines = [tuple(map(int, line.split())) for line in complete]
        assert lines, "the writer acknowledged nothing before it was killed"
        acked += [(r, i, q) for r, i, q in lines]

        with MessageStore(small_config(tmp_path)) as store:
            assert not store.last_exit_ok  # the abort file was left: abnormal recovery ran
            records = read_all(store)
            assert [r.queue_offset for r in records] == list(range(len(records)))
            stored = {r.body: r.queue_offset for r in records}
            for r, i, q in acked:
                body = f"round {r} message {i} ".encode() * (1 + i % 40)
                assert stored.get(body) == q, f"acknowledged round {r} message {i} lost"
        # the next round appends after whatever survived, acknowledged or not
