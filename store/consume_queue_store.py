"""All consume queues of a store, by topic and queue id (``ConsumeQueueStore``).

Directory layout ``consumequeue/TOPIC/QUEUEID/`` (see :mod:`store.consume_queue` for the files).
Loading maps every queue found on disk; queues are created on first dispatch.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from store.consume_queue import ConsumeQueue


class ConsumeQueueStore:
    def __init__(self, root: str, file_size: int, preallocate: bool = True) -> None:
        self.root = root
        self.file_size = file_size
        self.preallocate = preallocate
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}

    def load(self) -> None:
        os.makedirs(self.root, exist_ok=True)
        for topic in sorted(os.listdir(self.root)):
            topic_dir = os.path.join(self.root, topic)
            if not os.path.isdir(topic_dir):
                continue
            for name in sorted(os.listdir(topic_dir)):
                if not name.isdigit() or not os.path.isdir(os.path.join(topic_dir, name)):
                    continue
                cq = ConsumeQueue(self.root, topic, int(name), self.file_size, self.preallocate)
                cq.load()
                self.queues[(topic, int(name))] = cq

    def recover(self) -> list[ConsumeQueue]:
        """Recover every queue; returns those that look damaged (see :meth:`ConsumeQueue.recover`)."""
        return [cq for cq in self.queues.values() if not cq.recover()]

    def remove(self, cq: ConsumeQueue, keep_in: str) -> str:
        """Forget ``cq`` and move its directory into ``keep_in`` (nothing is deleted); returns where."""
        cq.close()
        del self.queues[(cq.topic, cq.queue_id)]
        target = os.path.join(keep_in, f"consumequeue-{cq.topic}-{cq.queue_id}-{time.time_ns()}")
        os.makedirs(keep_in, exist_ok=True)
        os.replace(os.path.join(self.root, cq.topic, str(cq.queue_id)), target)
        return target

    def units_below(self, commit_log_offset: int) -> int:
        """How many messages of all queues (from their min offsets) start before ``commit_log_offset``."""
        return sum(cq.units_below(commit_log_offset) for cq in self.queues.values())

    def blank_units_in(self, start: int, end: int) -> int:
        """Turn every unit pointing into commit-log range ``[start, end)`` into a placeholder, which
        readers skip (a damaged record keeps its queue offset, so later ones keep theirs)."""
        return sum(cq.blank_units_in(start, end) for cq in self.queues.values())

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.queues.values()))

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.queues.get((topic, queue_id))
        if cq is None:
            cq = ConsumeQueue(self.root, topic, queue_id, self.file_size, self.preallocate)
            self.queues[(topic, queue_id)] = cq
        return cq

    def max_physic_offset(self) -> int:
        """``getMaxPhyOffsetInConsumeQueue``: the largest record end any queue references (-1: none)."""
        return max((cq.max_physic_offset for cq in self.queues.values()), default=-1)

    def max_offsets(self) -> dict[tuple[str, int], int]:
        """The next queue offset of every queue (``CommitLog.topicQueueTable`` after recovery)."""
        return {key: cq.max_offset for key, cq in self.queues.items()}

    def truncate_dirty(self, commit_log_end: int) -> None:
        for cq in self.queues.values():
            if cq.max_physic_offset > commit_log_end:
                cq.truncate_dirty(commit_log_end)

    def correct_min_offsets(self, min_commit_log_offset: int) -> None:
        for cq in self.queues.values():
            cq.correct_min_offset(min_commit_log_offset)

    def delete_expired(self, min_commit_log_offset: int) -> int:
        return sum(cq.delete_expired_files(min_commit_log_offset) for cq in self.queues.values())

    def flush(self) -> None:
        for cq in self.queues.values():
            cq.flush()

    def close(self) -> None:
        for cq in self.queues.values():
            cq.close()

    def destroy_topics(self, topics: set[str]) -> list[tuple[str, int]]:
        """Close and delete the queues of ``topics`` with their files (``deleteTopics``); returns
        the ``(topic, queue id)`` of each queue gone."""
        gone = [key for key in self.queues if key[0] in topics]
        for key in gone:
            cq = self.queues.pop(key)
            cq.close()
            cq.destroy()
        for topic in {topic for topic, _ in gone}:
            with contextlib.suppress(OSError):  # something else left in it: kept
                os.rmdir(os.path.join(self.root, topic))
        return gone

    def destroy(self) -> None:
        for cq in self.queues.values():
            cq.destroy()
        self.queues.clear()
