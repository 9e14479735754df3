"""The cluster under test: where it listens and how to talk to it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TargetSpec:
    """Where the cluster under test listens and how to talk to it."""

    namesrv: str
    grpc: str | None = None
    cluster: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    tls: bool = False

    @property
    def label(self) -> str:
        return self.namesrv + (f",{self.grpc}" if self.grpc else "")
