"""The values of a send: :class:`SendRequest` (with its :class:`BatchItem` s) in,
:class:`SendOutcome` out, :class:`SendRefused` raised (:mod:`broker.service.send`).

Per-send values, compiled with mypyc beside the service (:mod:`gateway.native`): plain
``__slots__`` classes, no dataclasses.
"""

from __future__ import annotations

from codec.errors import RocketMQError
from store.results import PutMessageStatus


class SendRefused(RocketMQError):
    """A send refused by a check or by the store: ``response_code`` and the remark (the message)."""


class BatchItem:
    """One message of a batch: its body, flag and own properties.

    ``properties_text`` is the properties string as the client encoded it, when it sent one (a
    remoting batch body); the stored record keeps it verbatim. ``properties`` must be its decoded
    form; the service adds the batch-level properties to it."""

    __slots__ = ("body", "flag", "properties", "properties_text")

    def __init__(
        self, body: bytes, flag: int, properties: dict[str, str], properties_text: str | None = None
    ) -> None:
        self.body = body
        self.flag = flag
        self.properties = properties
        self.properties_text = properties_text


class SendRequest:
    """What a producer asks to store (``SendMessageRequestHeader`` and its body, typed).

    ``queue_id`` -1 lets the broker choose; ``batch`` (not None) makes it a batch whose
    ``properties`` are the batch-level ones and whose ``body`` is unused; ``max_reconsume_times``
    is the client's own limit for a message to a retry topic, None for the group's;
    ``default_topic`` and ``default_topic_queue_nums`` say how an unknown topic is auto-created;
    ``remote_addr`` is the client's ``host:port``, the records' born host. The service takes
    ownership of the property dicts (it adds the broker's properties to them)."""

    __slots__ = (
        "batch",
        "body",
        "born_timestamp",
        "default_topic",
        "default_topic_queue_nums",
        "flag",
        "max_reconsume_times",
        "producer_group",
        "properties",
        "queue_id",
        "reconsume_times",
        "remote_addr",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        properties: dict[str, str],
        body: bytes = b"",
        batch: list[BatchItem] | None = None,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        flag: int = 0,
        reconsume_times: int = 0,
        max_reconsume_times: int | None = None,
        producer_group: str = "",
        default_topic: str = "",
        default_topic_queue_nums: int = 0,
        remote_addr: str = "",
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.properties = properties
        self.body = body
        self.batch = batch
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.flag = flag
        self.reconsume_times = reconsume_times
        self.max_reconsume_times = max_reconsume_times
        self.producer_group = producer_group
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self.remote_addr = remote_addr


class SendOutcome:
    """A stored send: ``code`` is SUCCESS or the flush/replica status that still stored it;
    ``physical_offsets`` the records' commit-log offsets (one per batch item); ``queue_id`` the
    queue answered (a delayed message's real queue, not the schedule queue); ``queue_offset`` the
    first record's; ``transaction_id`` the message's ``UNIQ_KEY`` (a batch's batch-level one, or
    None); ``recall_handle`` the handle of a timer message, else None."""

    __slots__ = (
        "code",
        "physical_offsets",
        "queue_id",
        "queue_offset",
        "recall_handle",
        "status",
        "transaction_id",
    )

    def __init__(
        self,
        *,
        status: PutMessageStatus,
        code: int,
        physical_offsets: list[int],
        queue_id: int,
        queue_offset: int,
        transaction_id: str | None,
        recall_handle: str | None,
    ) -> None:
        self.status = status
        self.code = code
        self.physical_offsets = physical_offsets
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.transaction_id = transaction_id
        self.recall_handle = recall_handle
