# Sourced by scripts/test and scripts/run: creates .venv and installs the project with its
# dev dependencies when pyproject.toml changed since the last install.
set -euo pipefail
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q -U pip
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Java side: the scenario runner jar and the reference Apache RocketMQ jars (compat_tests/).
if [ -f scripts/setup-java.sh ]; then
  bash scripts/setup-java.sh
fi
