"""Ahead-of-time compiled hot path: builds codec/, store/, the send service
(``broker/service/send.py``) and its remoting processor (``broker/processors/send.py``) with
mypyc, and loads the build only while it matches the sources.

A busy sender is bound by the CPU the broker spends per message in pure CPython; mypyc (shipped
inside mypy, which type-checks the project with ``--strict`` anyway) turns the fully annotated
modules into C extensions. Java has no counterpart: the JIT does this for RocketMQ.

The extensions are never written next to the sources. CPython prefers an in-place ``.so`` over the
``.py`` of the same name, so a stale one would silently mask a source edit. Instead
``main(["build"])`` (run by ``scripts/build-native.sh``: from ``scripts/setup.sh``, in the
background for ``scripts/run``) compiles into ``build/native/`` (gitignored) and
records there a stamp: the SHA-256 of every compiled source. At interpreter start-up
(``rmq_gateway_native.pth``, written into the virtualenv by ``scripts/setup.sh``) :func:`activate`
hashes the sources again and, only if every hash matches, puts a finder first on ``sys.meta_path``
that loads those modules from the build. One edited, added or removed file and the whole build is
ignored (mypyc inlines across modules of one build, so half of it cannot be kept): the pure modules
run, and ``scripts/setup.sh`` recompiles on its next run. ``RMQ_GATEWAY_PURE=1`` forces the pure
modules.

Not compiled, and why:

* ``__init__.py`` files: the packages stay the source directories, so an uncompiled module of a
  compiled package is found where it always was;
* ``codec/headers`` and ``codec/bodies``: their classes build their decoders at run time from
  dataclass introspection and ``exec`` (per-subclass class attributes, ``cls.__dict__``), which
  mypyc's native classes do not allow; the generated decoders are plain Python either way;
* ``codec/fastjson.py`` and ``store/metadata.py``: the JSON config files (fastjson's bare keys,
  its pretty layout), read and written at start-up and on flush, never per message; compiled
  together, a written config file read back with trailing data. Cold, so not chased;
* ``codec/errors.py`` and ``store/errors.py``: the error hierarchy is subclassed in interpreted
  modules (broker/, gateway/) that set ``response_code`` as a class attribute; a compiled base
  class keeps it as an instance slot that those subclasses never fill (``AttributeError`` in the
  dispatcher's error answer).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
BUILD_DIR = REPO / "build" / "native"
#: The packages compiled by default: the measured gains are in docs/send-path-performance.md. An
#: entry ending in ``.py`` is one module of a package otherwise left pure: the send service is on
#: every send's path (remoting and gRPC), its remoting processor on every remoting send's; the
#: rest of broker/ is not, and the pull processor did not pay.
PACKAGES = (
    "codec",
    "store",
    "broker/service/send_values.py",
    "broker/service/send.py",
    "broker/processors/send.py",
)
#: Directories left to the interpreter (see the module docstring).
EXCLUDED = (
    "codec/headers/",
    "codec/bodies/",
    "codec/fastjson.py",
    "store/metadata.py",
    "codec/errors.py",
    "store/errors.py",
)
PURE_ENV = "RMQ_GATEWAY_PURE"
STAMP = "stamp.json"

_state = "pure: not activated"


def source_files(root: Path, packages: Sequence[str]) -> list[Path]:
    """The modules of ``packages`` that are compiled, relative to ``root``, sorted; an entry
    ending in ``.py`` names one module (of a package that is otherwise left pure)."""
    files = []
    for package in packages:
        found = [root / package] if package.endswith(".py") else sorted((root / package).rglob("*.py"))
        for path in found:
            rel = path.relative_to(root)
            if path.name == "__init__.py" or rel.as_posix().startswith(EXCLUDED):
                continue
            files.append(rel)
    return files


def sources_digest(root: Path, files: Sequence[Path]) -> str:
    """One hash over the names and contents of ``files``: any edit, addition or removal changes it."""
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return digest.hexdigest()


def _module_name(rel: Path) -> str:
    return ".".join(rel.with_suffix("").parts)


def build(root: Path = REPO, packages: Sequence[str] = PACKAGES, build_dir: Path = BUILD_DIR) -> float:
    """Compile ``packages`` into ``build_dir`` and write the stamp; returns the seconds it took.

    The stamp is removed first and written last, so a failed or interrupted build leaves none and
    the pure modules run. Raises whatever mypyc or the C compiler raise.
    """
    from mypyc.build import mypycify  # the build needs mypy; running the gateway does not
    from setuptools import Distribution  # type: ignore[import-untyped]

    started = time.monotonic()
    (build_dir / STAMP).unlink(missing_ok=True)
    shutil.rmtree(build_dir / "lib", ignore_errors=True)  # no module of an earlier build survives
    files = source_files(root, packages)
    digest = sources_digest(root, files)
    lib = build_dir / "lib"
    cwd = Path.cwd()
    os.chdir(root)  # mypycify names the modules after the paths it is given
    try:
        extensions = mypycify([str(f) for f in files], opt_level="3", target_dir=str(build_dir / "c"))
        dist = Distribution({"name": "rmq-gateway-native", "ext_modules": extensions})
        dist.script_args = ["build_ext", "--build-lib", str(lib), "--build-temp", str(build_dir / "tmp")]
        dist.parse_command_line()
        dist.run_commands()
    finally:
        os.chdir(cwd)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = {
        ".".join(p.relative_to(lib).parts)[: -len(suffix)]: p.relative_to(lib).as_posix()
        for p in lib.rglob("*" + suffix)
    }
    seconds = time.monotonic() - started
    stamp = {
        "ext_suffix": suffix,
        "packages": list(packages),
        "sources": digest,
        "modules": modules,
        "seconds": round(seconds, 1),
    }
    (build_dir / STAMP).write_text(json.dumps(stamp, indent=1))
    return seconds


class _BuildFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules of one matching build, and nothing else."""

    def __init__(self, lib: Path, modules: dict[str, str]) -> None:
        self._lib = lib
        self._modules = modules

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        rel = self._modules.get(fullname)
        if rel is None:
            return None
        return importlib.util.spec_from_file_location(fullname, self._lib / rel)


def check(root: Path = REPO, build_dir: Path = BUILD_DIR) -> tuple[dict[str, str] | None, str]:
    """(the compiled modules to load, or None; the state in words)."""
    if os.environ.get(PURE_ENV) == "1":
        return None, f"pure: {PURE_ENV}=1"
    try:
        stamp = json.loads((build_dir / STAMP).read_text())
    except (OSError, ValueError):
        return None, "pure: not compiled (yet: scripts/setup.sh compiles when a C compiler exists)"
    if stamp.get("ext_suffix") != sysconfig.get_config_var("EXT_SUFFIX"):
        return None, "pure: compiled for another Python"
    packages = stamp["packages"]
    try:
        digest = sources_digest(root, source_files(root, packages))
    except OSError:
        digest = ""
    if digest != stamp["sources"]:
        return None, "pure: sources changed since the compile (scripts/setup.sh recompiles)"
    return dict(stamp["modules"]), "compiled: " + ", ".join(packages)


def activate(root: Path = REPO, build_dir: Path = BUILD_DIR) -> str:
    """Load the compiled modules from now on when the build matches the sources; returns the state.

    Must run before any of those modules is imported (the ``.pth`` file runs it at start-up).
    """
    global _state
    modules, _state = check(root, build_dir)
    if modules is not None:
        sys.meta_path.insert(0, _BuildFinder(build_dir / "lib", modules))
    return _state


def describe() -> str:
    """Which build runs, for the start-up log: ``compiled: codec, store, broker/service/send.py, ...``
    or ``pure: <why>``."""
    return _state


def main(argv: Sequence[str]) -> int:
    """``build [PACKAGES]`` compiles; ``status`` prints the state; ``packages``: the default ones."""
    if argv[:1] == ["build"]:
        packages = tuple(argv[1].split(",")) if len(argv) > 1 else PACKAGES
        print(f"native: compiled {', '.join(packages)} in {build(packages=packages):.0f} s")
        return 0
    if argv[:1] == ["status"]:
        print(check()[1])
        return 0
    if argv[:1] == ["packages"]:
        print(", ".join(PACKAGES))
        return 0
    print("usage: gateway.native build [PACKAGES] | status | packages", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
