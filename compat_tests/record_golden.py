"""Record golden request frames from the real Java clients (4.9.8 and 5.3.3, JSON and ROCKETMQ headers).

``python -m compat_tests.record_golden [--out tests/golden/frames]`` (after ``scripts/setup-java.sh``)
starts this project's NameServer and Broker in-process, puts a :class:`RecordingProxy` in front
of each (the broker advertises 127.0.0.2 and the proxy listens there), runs the ``Capture``
scenario with each client line and serialize type, and writes the client-to-server frames:
``<line>-<serialize>/<NN>-<CODE>.bin`` (whole frame, length prefix included) plus a ``.json``
sidecar decoded *independently of codec/* (plain ``json`` and ``struct``), which the codec tests
compare against.

Only requests are kept: they are the real clients' bytes whatever server answers. Responses of
the real Apache RocketMQ broker are not recorded yet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import trio

from broker.app import BrokerApp
from broker.config import BrokerConfig
from codec.codes import RequestCode
from compat_tests.proxy import Frame, RecordingProxy
from gateway.server import ServerConfig
from namesrv.app import NamesrvApp
from namesrv.config import NamesrvConfig

JAVA_DIR = Path(__file__).parent / "java"
LINES = ("4.9.8", "5.3.3")
SERIALIZE = ("JSON", "ROCKETMQ")
KEEP_PER_CODE = 2
LANGUAGES = [
    "JAVA",
    "CPP",
    "DOTNET",
    "PYTHON",
    "DELPHI",
    "ERLANG",
    "RUBY",
    "OTHER",
    "HTTP",
    "GO",
    "PHP",
    "OMS",
    "RUST",
    "NODE_JS",
]


def sidecar(data: bytes) -> dict[str, Any]:
    """Decode a frame with nothing but the spec's byte layout (an oracle independent of codec/)."""
    length, word = struct.unpack_from(">iI", data)
    serialize, header_len = word >> 24, word & 0xFFFFFF
    header = data[8 : 8 + header_len]
    body = data[8 + header_len :]
    if serialize == 0:
        obj = json.loads(header)
        out = {
            "serialize_type": "JSON",
            "code": obj["code"],
            "language": obj.get("language"),
            "version": obj.get("version"),
            "opaque": obj.get("opaque"),
            "flag": obj.get("flag"),
            "remark": obj.get("remark"),
            "ext_fields": obj.get("extFields"),
        }
    else:
        code, lang, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", header)
        pos = 17
        remark = header[pos : pos + remark_len].decode() if remark_len else None
        pos += remark_len
        (ext_len,) = struct.unpack_from(">i", header, pos)
        pos += 4
        end = pos + ext_len
        ext: dict[str, str] = {}
        while pos < end:
            (klen,) = struct.unpack_from(">h", header, pos)
            key = header[pos + 2 : pos + 2 + klen].decode()
            pos += 2 + klen
            (vlen,) = struct.unpack_from(">i", header, pos)
            ext[key] = header[pos + 4 : pos + 4 + vlen].decode()
            pos += 4 + vlen
        out = {
            "serialize_type": "ROCKETMQ",
            "code": code,
            "language": LANGUAGES[lang],
            "version": version,
            "opaque": opaque,
            "flag": flag,
            "remark": remark,
            "ext_fields": ext or None,
        }
    out["code_name"] = RequestCode(out["code"]).name
    out["length"] = length
    out["body_len"] = len(body)
    out["body_sha256"] = hashlib.sha256(body).hexdigest()
    try:
        out["body_text"] = body.decode() if body else ""
    except UnicodeDecodeError:
        out["body_text"] = None
    return out


async def capture(line: str, serialize: str, workdir: Path) -> list[Frame]:
    namesrv = NamesrvApp(NamesrvConfig(kv_config_path=str(workdir / "kv.json")), ServerConfig(port=0))
    async with trio.open_nursery() as nursery:
        await nursery.start(namesrv.run)
        ns_proxy = RecordingProxy("namesrv", ("127.0.0.1", 0), ("127.0.0.1", namesrv.server.port))
        await nursery.start(ns_proxy.run)
        broker_config = BrokerConfig(
            namesrv_addr=f"127.0.0.1:{namesrv.server.port}", broker_ip1="127.0.0.2", listen_port=0
        )
        broker = BrokerApp(broker_config, ServerConfig(host="127.0.0.1", port=0))
        await nursery.start(broker.run)
        br_proxy = RecordingProxy(
            "broker", ("127.0.0.2", broker.server.port), ("127.0.0.1", broker.server.port)
        )
        await nursery.start(br_proxy.run)
        lib = JAVA_DIR / "target" / f"lib-{line}"
        classes = JAVA_DIR / "target" / f"classes-{line}"
        cmd = [
            "java",
            f"-Drocketmq.serialize.type={serialize}",
            f"-Duser.home={workdir}",
            "-Drocketmq.client.logRoot=" + str(workdir / "logs"),
            "-cp",
            f"{classes}{os.pathsep}{lib}/*",
            "rmqcompat.Capture",
            f"127.0.0.1:{ns_proxy.port}",
            "GoldenTopic",
        ]
        await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False)
        broker.shutdown()
        namesrv.shutdown()
        nursery.cancel_scope.deadline = trio.current_time() + 10
    return [f for f in ns_proxy.frames + br_proxy.frames if f.direction == "c2s"]


def write(frames: list[Frame], out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    kept: dict[int, int] = {}
    n = 0
    for frame in frames:
        meta = sidecar(frame.data)
        if kept.get(meta["code"], 0) >= KEEP_PER_CODE:
            continue
        kept[meta["code"]] = kept.get(meta["code"], 0) + 1
        n += 1
        stem = out / f"{n:02d}-{meta['code_name']}-{frame.label}"
        stem.with_suffix(".bin").write_bytes(frame.data)
        stem.with_suffix(".json").write_text(
            json.dumps(meta, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        )
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="tests/golden/frames")
    args = parser.parse_args()
    for line in LINES:
        for serialize in SERIALIZE:
            with tempfile.TemporaryDirectory() as tmp:
                frames = trio.run(capture, line, serialize, Path(tmp))
            count = write(frames, Path(args.out) / f"{line}-{serialize}")
            print(f"{line} {serialize}: {count} frames kept of {len(frames)}")


if __name__ == "__main__":
    main()
