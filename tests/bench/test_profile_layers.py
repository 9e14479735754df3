"""bench.side_by_side.profile: py-spy's collapsed stacks (``--native``) summed by send-path layer.

The stacks are shaped as py-spy 0.4 writes them for our server (root first): interpreted frames
``name (path:line)``, mypyc's compiled functions ``CPyDef_<module>___<name>`` and libc frames.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.side_by_side import profile

SO = "d15477764cf5a7af22d1__mypyc.cpython-311-x86_64-linux-gnu.so"
READER = (
    "0x7f3f27e4524a (libc.so.6)",
    "run (/w/.venv/lib/python3.11/site-packages/trio/_core/_run.py:2300)",
    "_reader (/w/gateway/transport/connection.py:210)",
    "dispatch_nowait (/w/gateway/transport/dispatch.py:140)",
)
SEND = (
    *READER,
    "send_v2 (/w/broker/processors/send.py:131)",
    f"CPyDef_send___SendMessageProcessor___send ({SO})",
)
RAW = "\n".join(
    [
        # compiled store put below the send processor: the store's
        ";".join(
            (
                *SEND,
                f"CPyDef_commit_log___CommitLog___put_message ({SO})",
                "__memmove_avx_unaligned (libc.so.6)",
            )
        )
        + " 30",
        # the consume queue's pwrite: dispatch, not a socket although the syscall sits under it
        ";".join((*SEND, f"CPyDef_consume_queue___ConsumeQueue___put ({SO})", "__libc_pwrite64 (libc.so.6)"))
        + " 20",
        # the typed header decoder is generated Python
        ";".join((*READER, "decode (/w/codec/headers/base.py:88)", "<genexpr> (<string>:3)")) + " 10",
        # the answer's header encoded by the compiled codec
        ";".join((*READER, f"CPyDef_command___RemotingCommand___encode ({SO})")) + " 5",
        # the writer's send: socket
        ";".join(
            (
                READER[0],
                READER[1],
                "send (/w/.venv/lib/python3.11/site-packages/trio/_socket.py:900)",
                "__libc_send (libc.so.6)",
            )
        )
        + " 25",
        # the send processor's own work, interpreter frames under it
        ";".join((*SEND, "PyDict_SetItem (libpython3.11.so)")) + " 8",
        # nothing of ours on the stack
        "0x7f3f27e4524a (libc.so.6);_PyObject_GC_Collect (libpython3.11.so) 2",
        "garbage line",
    ]
)


def test_samples_go_to_the_innermost_frame_that_names_a_layer(tmp_path: Path) -> None:
    path = tmp_path / "Bench_sync16_0.txt"
    path.write_text(RAW + "\n")
    stacks = profile.read_stacks(path)
    assert sum(stacks.values()) == 100

    assert dict(profile.by_layer(stacks)) == {
        profile.STORE_PUT: 30,
        profile.SOCKET_TRIO: 25,
        profile.STORE_DISPATCH: 20,
        profile.HEADER_DECODE: 10,
        profile.SEND_PROCESSOR: 8,
        profile.ENCODE: 5,
        profile.OTHER: 2,
    }
    assert profile.top_frames(stacks, 1) == [("__memmove_avx_unaligned (libc.so.6)", 30)]


def test_main_prints_each_layers_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.txt"
    path.write_text(RAW)
    assert profile.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert " 30.0%  store put (commit log, records)" in out
    assert profile.main([]) == 2


def test_an_interpreted_line_calling_compiled_code_counts_as_what_it_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --native a compiled callee is invisible: the caller's current line names it."""
    (tmp_path / "broker").mkdir()
    (tmp_path / "broker" / "message_service.py").write_text("x = 1\nresult = self.store.put_messages(msgs)\n")
    monkeypatch.setattr(profile, "REPO", tmp_path)
    profile.source_line.cache_clear()
    try:
        stack = (*READER, "put_nowait (broker/message_service.py:2)")
        assert profile.layer_of(stack) == profile.STORE_PUT
        assert profile.layer_of((*READER, "put_nowait (broker/message_service.py:1)")) == profile.BROKER_OTHER
    finally:
        profile.source_line.cache_clear()


def test_the_table_scales_each_layers_share_by_our_cpu_per_message(tmp_path: Path) -> None:
    (tmp_path / "Bench_sync16_0.txt").write_text(RAW)
    (tmp_path / "Bench_sync16_1.txt").write_text(RAW)
    cpu = {"ours": {"server_cpu_us_per_msg": {"median": 200.0}}}
    cpu["reference"] = {"server_cpu_us_per_msg": {"median": 150.0}}
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"summary": {"sync1": cpu, "sync16": cpu}}))

    out = profile.table(results, tmp_path).splitlines()

    assert out[0] == "| layer | sync16 share | sync16 µs/msg |"  # sync1 has no profile
    assert "| store put (commit log, records) | 30.0% | 60.0 |" in out
    assert "| **gap ours - reference** | | +50.0 |" in out
    assert "| samples (rounds pooled) | 200 |  |" in out
