"""Generates the gRPC message classes (apache.rocketmq.v2) before the package is built.

Everything else about the package is in pyproject.toml. The generated module is written next to
its .proto file (gateway/transport/grpc/proto/), so wheels carry it and editable installs find it;
git ignores it. Needs grpcio-tools, a build requirement.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithProtos(build_py):
    def run(self) -> None:
        protogen = runpy.run_path(str(Path(__file__).parent / "gateway/transport/grpc/protogen.py"))
        protogen["generate"]()
        super().run()


setup(cmdclass={"build_py": BuildWithProtos})
