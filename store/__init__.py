"""The message store: RocketMQ's file formats on disk, byte-compatible with the Java broker's.

A plain synchronous library with one writer: no Trio, no sockets, no threads of its own
(``tests/test_layers.py``); it imports only :mod:`codec`. The broker drives it
(:mod:`broker.message_service`); Spark reads its files directly.

* :mod:`store.message_store`: the facade the broker uses (``DefaultMessageStore``): puts, reads,
  lookups, recovery at open, periodic flush and cleanup.
* Files: :mod:`store.mapped_file` / :mod:`store.mapped_file_queue` (memory-mapped segment files),
  :mod:`store.commit_log`, :mod:`store.consume_queue` / :mod:`store.consume_queue_store`,
  :mod:`store.index_file` / :mod:`store.index_service`, :mod:`store.checkpoint`,
  :mod:`store.metadata` (the broker's JSON tables under ``config/``).
* Derived data and reading: :mod:`store.dispatch` (what a record adds to the consume queues and
  index), :mod:`store.message_reader`, :mod:`store.message_filter`.
* Lifecycle: :mod:`store.recovery` (what recovery rebuilds and what it trusts), :mod:`store.cleanup`.
* Replication: :mod:`store.ha` (what a master sends from an offset, a slave's append and dispatch
  of it; the sockets are :mod:`broker.ha`'s).
* :mod:`store.config`, :mod:`store.results`, :mod:`store.errors`.

Each file format is described field by field in its module's docstring. A new file kind gets its
own module here; anything that waits (fsync in a thread, long polling) belongs to the broker.
"""
