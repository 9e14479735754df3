"""The mypyc build (gateway/native.py) is loaded only while it matches the sources: an edited
source is never masked by a stale compiled module, and RMQ_GATEWAY_PURE=1 forces the pure one.

Compiles a one-module probe package in a temporary directory (a few seconds of mypyc and gcc), then
imports it in fresh interpreters as a developer's process would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway import native

PROBE = "def answer() -> int:\n    return {value}\n"
SHOW = """
import sys
from pathlib import Path
from gateway import native
root = Path(sys.argv[1])
sys.path.insert(0, str(root))
print(native.activate(root, root / "build"))
import nativeprobe.mod as mod
print(mod.answer(), Path(mod.__file__).suffix)
"""


def run_probe(root: Path, **env: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", SHOW, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RMQ_GATEWAY_PURE": "0", **env},
        check=True,
    )
    return done.stdout.splitlines()


def test_an_edited_source_is_not_masked_by_its_compiled_module(tmp_path: Path) -> None:
    if shutil.which("cc") is None:  # the suite's machines have gcc: a missing one is a failure
        pytest.fail("no C compiler: the compiled build cannot be checked (install gcc)")
    (tmp_path / "nativeprobe").mkdir()
    (tmp_path / "nativeprobe" / "__init__.py").write_text("")
    source = tmp_path / "nativeprobe" / "mod.py"
    source.write_text(PROBE.format(value=1))
    native.build(tmp_path, ["nativeprobe"], tmp_path / "build")

    assert run_probe(tmp_path) == ["compiled: nativeprobe", "1 .so"]
    assert run_probe(tmp_path, RMQ_GATEWAY_PURE="1") == ["pure: RMQ_GATEWAY_PURE=1", "1 .py"]

    source.write_text(PROBE.format(value=2))
    assert run_probe(tmp_path) == [
        "pure: sources changed since the compile (scripts/setup.sh recompiles)",
        "2 .py",
    ]

    native.build(tmp_path, ["nativeprobe"], tmp_path / "build")
    assert run_probe(tmp_path) == ["compiled: nativeprobe", "2 .so"]


def test_without_a_build_the_pure_modules_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.PURE_ENV, raising=False)  # the suite's pure pass sets it
    modules, state = native.check(tmp_path, tmp_path / "build")
    assert modules is None
    assert state.startswith("pure: not compiled")


def test_a_module_file_compiles_alone_from_a_package_left_pure(tmp_path: Path) -> None:
    """``native build codec,store,broker/processors/send.py``: how a processor is tried compiled."""
    for rel in ("pkg/__init__.py", "pkg/a.py", "pkg/b.py", "other/c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    files = native.source_files(tmp_path, ["other", "pkg/b.py"])
    assert [f.as_posix() for f in files] == ["other/c.py", "pkg/b.py"]
