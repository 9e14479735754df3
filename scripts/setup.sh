# Sourced by scripts/test and scripts/run: creates .venv and installs the project with its
# dev dependencies when pyproject.toml changed since the last install. With SETUP_JAVA=0 the
# Java side (scenario runner, reference RocketMQ jars) is skipped: `scripts/run` needs none of it.
set -euo pipefail
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q -U pip
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q -e '.[dev,testing,bench,spark]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# The gRPC message classes, generated from the .proto (also done by setup.py when pip builds).
proto=gateway/transport/grpc/proto
if [ ! -f $proto/rocketmq_v2_pb2.py ] || [ $proto/rocketmq_v2.proto -nt $proto/rocketmq_v2_pb2.py ]; then
  .venv/bin/python -m gateway.transport.grpc.protogen
fi
if [ "${SETUP_JAVA:-1}" = 1 ] && [ -f scripts/setup-java.sh ]; then
  bash scripts/setup-java.sh
  bash bench/java/build.sh  # the benchmark's load driver (rocketmq-client 5.3.3)
fi
