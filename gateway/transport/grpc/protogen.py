"""Generate the Python message classes of apache.rocketmq.v2 from proto/rocketmq_v2.proto.

Run at setup time (scripts/setup.sh, ``python -m gateway.transport.grpc.protogen``): it needs
grpcio-tools (the ``protoc`` compiler packaged for pip), which is a development dependency only;
at run time the generated module needs just ``protobuf``. The output, ``rocketmq_v2_pb2.py`` and its
``.pyi`` stub for mypy, is ignored by git: generated code is never checked in or edited.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent / "proto"
PROTO_FILE = "rocketmq_v2.proto"


def generate(out_dir: Path = PROTO_DIR) -> None:
    """Compile the proto file into ``out_dir``.

    Raises RuntimeError when grpcio-tools is missing or protoc reports an error.
    """
    try:
        from grpc_tools import protoc  # type: ignore[import-untyped]
    except ImportError as err:
        raise RuntimeError(
            "grpcio-tools is needed to generate the gRPC messages: pip install grpcio-tools"
        ) from err
    import importlib.resources

    include = str(importlib.resources.files("grpc_tools") / "_proto")
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        str(PROTO_DIR / PROTO_FILE),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {PROTO_DIR / PROTO_FILE}")


def main() -> int:
    try:
        generate()
    except RuntimeError as err:
        print(f"protogen: {err}", file=sys.stderr)
        return 1
    print(f"protogen: generated apache.rocketmq.v2 messages in {PROTO_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
