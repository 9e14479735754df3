"""``h2``'s connection as the gRPC server drives it: its limits, its stream table, its output.

:class:`ServerH2` is the state machine :class:`gateway.transport.grpc.connection.Connection` owns;
the changes to ``h2.connection.H2Connection`` are the ones that connection needs (see the class).
"""

from __future__ import annotations

from collections.abc import Callable

import h2.config
import h2.connection
import h2.settings
import hyperframe.frame

from gateway.transport.grpc.request import HEADER_LIST_GOAWAY_SIZE


class ServerH2(h2.connection.H2Connection):
    """``h2``'s connection with two of its limits moved up to the gRPC connection, and its output
    announced (``on_output`` is called whenever frames are queued: the connection's writer wakes).

    ``h2`` ends the whole connection for a stream beyond MAX_CONCURRENT_STREAMS; Netty refuses
    that stream alone (REFUSED_STREAM), which the connection does on seeing the request, so the
    count here never stops one. Its HPACK limit is set to the size past which Netty ends the
    connection; the advertised MAX_HEADER_LIST_SIZE is answered with HTTP 431 by the connection.

    ``h2`` counts the open streams for every new one by walking all of them (and forgets the
    closed ones on the way): with a thousand calls in flight that walk was a quarter of the
    server's CPU. The connection forgets each stream when its call ends (:meth:`forget`), and
    the walk runs once every ``SWEEP_EVERY`` new streams for the few a call did not close.
    """

    SWEEP_EVERY = 512

    def __init__(self, config: h2.config.H2Configuration, on_output: Callable[[], None]) -> None:
        super().__init__(config)
        self.decoder.max_header_list_size = HEADER_LIST_GOAWAY_SIZE
        self._until_sweep = self.SWEEP_EVERY
        self._on_output = on_output

    def _prepare_for_sending(self, frames: list[hyperframe.frame.Frame]) -> None:
        """Every frame ``h2`` queues passes here: the connection's writer is told."""
        super()._prepare_for_sending(frames)
        if frames:
            self._on_output()

    def initiate_connection(self) -> None:
        super().initiate_connection()
        self._on_output()

    @property
    def pending_output(self) -> int:
        """Bytes queued and not yet taken by :meth:`data_to_send`."""
        return len(self._data_to_send)

    @property
    def open_inbound_streams(self) -> int:
        self._until_sweep -= 1
        if self._until_sweep <= 0:
            self._until_sweep = self.SWEEP_EVERY
            super().open_inbound_streams  # noqa: B018 - its accessor forgets the closed streams
        return 0

    def forget(self, stream_id: int) -> None:
        """Drop a closed stream's state, remembering how it closed (as the walk does)."""
        stream = self.streams.get(stream_id)
        if stream is not None and stream.closed:
            del self.streams[stream_id]
            self._closed_streams[stream_id] = stream.closed_by

    def _local_settings_acked(self) -> dict[h2.settings.SettingCodes | int, h2.settings.ChangedSetting]:
        changes = super()._local_settings_acked()
        self.decoder.max_header_list_size = HEADER_LIST_GOAWAY_SIZE
        return changes
