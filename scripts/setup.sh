# Sourced by scripts/test and scripts/run: creates .venv and installs the project when
# pyproject.toml changed since the last install. SETUP_EXTRAS names the extras to install with it
# (default: all that the test suite needs; scripts/run sets it empty, since running the gateway needs
# only its runtime dependencies). An install with every extra also serves scripts/run. With
# SETUP_JAVA=0 the Java side (scenario runner, reference RocketMQ jars) is skipped. With extras, the
# Prometheus server of the dashboard test is installed when missing (SETUP_PROMETHEUS=0: not), and
# Apache rocketmq-dashboard is built (cached per commit) with headless Chromium installed for
# compat_tests/test_dashboard_compat.py (SETUP_DASHBOARD=0: not).
set -euo pipefail
PY=${PYTHON:-python3}
EXTRAS=${SETUP_EXTRAS-dev,testing,bench,spark,native}
# A pip of 22.3 or later beside "$PY" installs into the venv from outside (pip --python): the venv
# is then created without a pip of its own, 3 s less on a fresh clone (ensurepip unpacks and
# compiles pip). venv_pip is the one way the scripts call pip on the venv.
host_pip() {
  "$PY" -c 'import sys, pip; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))' 2>/dev/null
}
venv_pip() {
  if [ -x .venv/bin/pip ]; then .venv/bin/pip "$@"; else "$PY" -m pip --python .venv/bin/python "$@"; fi
}
if [ ! -x .venv/bin/python ]; then
  if host_pip; then "$PY" -m venv --without-pip .venv; else "$PY" -m venv .venv; fi
fi
hash=$(sha1sum pyproject.toml | cut -c1-12)
full=.venv/.installed-$hash-full
stamp=.venv/.installed-$hash-${EXTRAS:+full}
stamp=${stamp%-}
if [ ! -f "$stamp" ] && [ ! -f "$full" ]; then
  # pip's and the build backend's chatter goes to a log, shown only when the install fails
  if [ -n "$EXTRAS" ]; then
    { [ -x .venv/bin/pip ] || .venv/bin/python -m ensurepip --default-pip; } >.venv/pip-install.log 2>&1 &&
      venv_pip install --disable-pip-version-check -e ".[$EXTRAS]" >>.venv/pip-install.log 2>&1 ||
      { tail -40 .venv/pip-install.log >&2; echo "setup: pip install failed (.venv/pip-install.log)" >&2; exit 1; }
    rm -f .venv/.installed-*
  else
    # scripts/run: the runtime dependencies and the checkout on sys.path (a .pth file), no editable
    # build: its isolated build environment (setuptools, grpcio-tools) took longer than all the
    # rest. grpcio-tools comes along only while the gRPC classes are still to be generated, into
    # the venv, so its protoc and the protobuf runtime agree. No bytecode compiled here: the
    # background job below does it.
    deps=$(.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
    proto_tools=grpcio-tools
    [ -f gateway/transport/grpc/proto/rocketmq_v2_pb2.py ] && proto_tools=
    # shellcheck disable=SC2086  # one requirement per word
    venv_pip install --disable-pip-version-check --no-compile --prefer-binary $deps $proto_tools \
      >.venv/pip-install.log 2>&1 ||
      { tail -40 .venv/pip-install.log >&2; echo "setup: pip install failed (.venv/pip-install.log)" >&2; exit 1; }
    .venv/bin/python -c 'import sys, sysconfig; open(sysconfig.get_paths()["purelib"] + "/rmq_gateway_checkout.pth", "w").write(sys.argv[1] + "\n")' "$PWD"
    if command -v setsid >/dev/null; then
      # The bytecode for the next starts, detached and niced (this start compiles what it imports).
      setsid -f nice -n 19 .venv/bin/python -m compileall -q -j 0 .venv/lib codec gateway broker namesrv store \
        </dev/null >/dev/null 2>&1
    fi
  fi
  touch "$stamp"
fi
# The hot path compiled with mypyc (gateway/native.py, docs/send-path-performance.md) into
# build/native/, loaded at start-up (the .pth file below) only while its stamp matches the sources;
# recompiled whenever they changed (scripts/build-native.sh). No C compiler, or a failed compile:
# the pure-Python modules run, said in one line. RMQ_GATEWAY_PURE=1 skips the compile (and the
# compiled modules at run time). SETUP_NATIVE=background (scripts/run) does not wait for the
# compile: it runs detached and niced, this start runs pure and the next one loads the build.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo 'import gateway.native; gateway.native.activate()' >"$site/rmq_gateway_native.pth"
native() { .venv/bin/python -c 'import sys, gateway.native as n; sys.exit(n.main(sys.argv[1:]))' "$@"; }
if [ "${RMQ_GATEWAY_PURE:-0}" != 1 ] && [ "$(native status)" != "compiled: $(native packages)" ]; then
  if [ "${SETUP_NATIVE:-wait}" = background ] && command -v setsid >/dev/null && command -v flock >/dev/null; then
    mkdir -p build/native
    setsid -f nice -n 19 bash scripts/build-native.sh --if-free </dev/null >/dev/null 2>&1
    echo "setup: compiling the hot path in the background (build/native/build.log): this start runs pure" >&2
  else
    bash scripts/build-native.sh
  fi
fi
# The gRPC message classes, generated from the .proto (also done by setup.py when pip builds).
proto=gateway/transport/grpc/proto
if [ ! -f $proto/rocketmq_v2_pb2.py ] || [ $proto/rocketmq_v2.proto -nt $proto/rocketmq_v2_pb2.py ]; then
  .venv/bin/python -m gateway.transport.grpc.protogen
fi
if [ "${SETUP_JAVA:-1}" = 1 ] && [ -f scripts/setup-java.sh ]; then
  bash scripts/setup-java.sh
  bash scripts/setup-spring.sh  # the Spring Boot application of compat_tests/test_spring_compat.py
  bash bench/java/build.sh  # the benchmark's load driver (rocketmq-client 5.3.3)
  bash scripts/setup-testcontainers.sh  # docker/testcontainers: the Java and Go modules, offline for their tests
fi
if [ -n "$EXTRAS" ] && [ "${SETUP_PROMETHEUS:-1}" = 1 ] && [ -f scripts/setup-prometheus.sh ]; then
  # A failed install does not stop the setup: compat_tests/test_prometheus_compat.py fails, saying so.
  bash scripts/setup-prometheus.sh ||
    echo "setup: prometheus not installed; compat_tests/test_prometheus_compat.py will fail" >&2
fi
if [ -n "$EXTRAS" ] && [ "${SETUP_DASHBOARD:-1}" = 1 ] && [ -f scripts/setup-dashboard.sh ]; then
  # A failed build does not stop the setup: compat_tests/test_dashboard_compat.py fails, saying so.
  bash scripts/setup-dashboard.sh ||
    echo "setup: rocketmq-dashboard not built; compat_tests/test_dashboard_compat.py will fail" >&2
fi
