#!/usr/bin/env bash
# Compiles the hot path with mypyc into build/native/ (gateway/native.py) unless a build matching
# the sources is there already. One build at a time: the lock build/native/.lock is held while it
# runs; a second caller waits for it and then finds the build done, or with --if-free gives up at
# once (scripts/run's background build: another one is under way). No C compiler, or a failed
# compile: said in one line, exit 0 (the pure-Python modules run). Output: build/native/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/native
exec 9>build/native/.lock
if [ "${1:-}" = --if-free ]; then
  flock -n 9 || exit 0
else
  flock 9
fi
# The `native` extra's requirements alone: reinstalling the project itself (pip install -e) would
# rewrite its import hooks under a gateway that scripts/run has just started.
native_requirements() {
  .venv/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["native"]))'
}
native() { .venv/bin/python -c 'import sys, gateway.native as n; sys.exit(n.main(sys.argv[1:]))' "$@"; }
if [ "$(native status)" = "compiled: $(native packages)" ]; then
  exit 0
fi
if ! command -v "${CC:-cc}" >/dev/null; then
  echo "setup: no C compiler (${CC:-cc}): the pure-Python modules run" >&2
elif ! { .venv/bin/python -c 'import mypyc' 2>/dev/null ||
  { { [ -x .venv/bin/pip ] || .venv/bin/python -m ensurepip --default-pip; } &&  # scripts/run's venv has none
    .venv/bin/pip install --disable-pip-version-check $(native_requirements); }; } >build/native/build.log 2>&1 ||
  ! native build >>build/native/build.log 2>&1; then
  echo "setup: mypyc compile failed (build/native/build.log): the pure-Python modules run" >&2
else
  tail -1 build/native/build.log
fi
