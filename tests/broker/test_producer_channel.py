"""Which producer a transaction check goes to (``ProducerManager.getAvailableChannel``): rotation
over the group, closed and unwritable connections skipped, the last active one as the fallback."""

from __future__ import annotations

from dataclasses import dataclass

from broker.client_manager import ClientChannel, ClientManager
from codec.command import RemotingCommand
from gateway.transport.dispatch import ConnectionInfo


@dataclass
class FakePeer:
    closed: bool = False
    writable: bool = True

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        raise NotImplementedError

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        raise NotImplementedError

    def try_invoke_oneway(self, request: RemotingCommand) -> bool:
        return not self.closed

    def close(self) -> None:
        self.closed = True


def group_of(manager: ClientManager, *peers: FakePeer) -> list[ClientChannel]:
    channels = []
    for conn_id, peer in enumerate(peers, 1):
        channel = ClientChannel(
            ConnectionInfo(conn_id, f"127.0.0.1:{conn_id}", "x", peer), f"c{conn_id}", 0, 0, 0
        )
        manager.register_producer("PG", channel)
        channels.append(channel)
    return channels


def test_checks_rotate_over_the_group_starting_with_the_second() -> None:
    manager = ClientManager()
    first, second = group_of(manager, FakePeer(), FakePeer())
    picks = [manager.find_producer_channel("PG") for _ in range(4)]
    assert picks == [second, first, second, first]


def test_closed_and_unwritable_channels_are_skipped() -> None:
    manager = ClientManager()
    first, _closed, _busy = group_of(manager, FakePeer(), FakePeer(closed=True), FakePeer(writable=False))
    assert all(manager.find_producer_channel("PG") is first for _ in range(6))


def test_last_active_channel_when_none_is_writable_and_none_when_all_closed() -> None:
    manager = ClientManager()
    busy, _closed = group_of(manager, FakePeer(writable=False), FakePeer(closed=True))
    assert manager.find_producer_channel("PG") is busy
    assert manager.find_producer_channel("nobody") is None
    lone = ClientManager()
    group_of(lone, FakePeer(closed=True))
    assert lone.find_producer_channel("PG") is None
