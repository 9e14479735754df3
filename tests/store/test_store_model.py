"""A hypothesis state machine: the store against a list-per-queue model through appends, reads,
segment rolls, clean reopens, crashes (abort file left, unflushed tail possibly torn) and recovery.

Crash model: after a crash only what was flushed is guaranteed; anything appended after the last
flush may survive or not, but a queue always holds what was appended, in order, at the offsets it
was given. A record damaged after the flushed end with whole records behind it is not a tail:
recovery keeps the records behind it and the damaged one's offset becomes a hole (``None`` in the
model) that readers skip; a flushed record never becomes a hole.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from codec.message import MessageRecord, iter_records
from store.message_store import MessageStore
from store.results import GetMessageStatus
from tests.store.helpers import small_config

QUEUES = [("A", 0), ("A", 1), ("B", 0)]


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="store-model-"))
        self.store: MessageStore | None = MessageStore(small_config(self.root)).open()
        self.model: dict[tuple[str, int], list[bytes | None]] = {q: [] for q in QUEUES}
        self.flushed: dict[tuple[str, int], int] = dict.fromkeys(QUEUES, 0)
        self.serial = 0

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @precondition(lambda self: self.store is not None)
    @rule(queue=st.sampled_from(QUEUES), size=st.integers(0, 3000), count=st.integers(1, 3))
    def append(self, queue: tuple[str, int], size: int, count: int) -> None:
        assert self.store is not None
        for _ in range(count):
            self.serial += 1
            body = (f"{self.serial}:".encode() + b"x" * size)[: max(size, 8)]
            result = self.store.put_message(MessageRecord(topic=queue[0], queue_id=queue[1], body=body))
            assert result.ok, result
            assert result.append_result is not None
            assert result.append_result.logics_offset == len(self.model[queue])
            self.model[queue].append(body)

    @precondition(lambda self: self.store is not None)
    @rule()
    def flush(self) -> None:
        assert self.store is not None
        self.store.flush()
        self.flushed = {q: len(v) for q, v in self.model.items()}

    @precondition(lambda self: self.store is not None)
    @rule(queue=st.sampled_from(QUEUES), start=st.integers(0, 40), count=st.integers(1, 40))
    def read_range(self, queue: tuple[str, int], start: int, count: int) -> None:
        assert self.store is not None
        in_range = self.model[queue][start : start + count]
        readable = [b for b in self.model[queue][start:] if b is not None]  # holes are skipped
        got = self.store.get_message(queue[0], queue[1], start, count, 1 << 30)
        if not in_range or not readable:
            assert got.status is not GetMessageStatus.FOUND
            return
        if got.status is GetMessageStatus.OFFSET_TOO_SMALL:  # only holes below the queue's min offset
            assert all(b is None for b in self.model[queue][start : got.min_offset])
            return
        bodies = [r.body for r in iter_records(got.body())]
        assert bodies == readable[: len(bodies)]
        if any(b is not None for b in in_range):
            assert bodies  # at least the first readable message is always returned

    @precondition(lambda self: self.store is not None)
    @rule()
    def reopen_cleanly(self) -> None:
        assert self.store is not None
        self.store.close()
        self.store = MessageStore(small_config(self.root)).open()
        assert self.store.last_exit_ok
        self.flushed = {q: len(v) for q, v in self.model.items()}

    @precondition(lambda self: self.store is not None)
    @rule(tear=st.booleans())
    def crash_and_recover(self, tear: bool) -> None:
        """Drop the store without closing it (abort file stays); maybe scribble past the flushed end."""
        assert self.store is not None
        store = self.store
        flushed_end = store.commit_log.queue.flushed_offset
        store._release_files()  # what a killed process leaves: files as they are, lock released
        self.store = None
        if tear:
            segment = store.config.mapped_file_size_commit_log
            path = self.root / "commitlog" / f"{flushed_end - flushed_end % segment:020d}"
            if path.exists():
                with path.open("r+b") as f:
                    f.seek(flushed_end % segment)
                    f.write(b"\xde\xad\xbe\xef" * 8)
        self.store = MessageStore(small_config(self.root)).open()
        assert not self.store.last_exit_ok
        for queue in QUEUES:
            survived = self.store.get_max_offset_in_queue(*queue)
            assert self.flushed[queue] <= survived <= len(self.model[queue])
            del self.model[queue][survived:]
            for offset in range(self.flushed[queue], survived):
                if self.store.get_queue_unit(*queue, offset) is None:
                    self.model[queue][offset] = None  # damaged after the flushed end: a hole
        self.flushed = {q: len(v) for q, v in self.model.items()}

    @invariant()
    def queues_match_the_model(self) -> None:
        if self.store is None:
            return
        for queue, bodies in self.model.items():
            assert self.store.get_max_offset_in_queue(*queue) == len(bodies)


StoreMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
test_store_model = StoreMachine.TestCase
