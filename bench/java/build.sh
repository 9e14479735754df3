#!/usr/bin/env bash
# Builds a load driver, idempotently (skipped when its sources did not change since its last build):
# * `build.sh`: src/rmqbench on rocketmq-client 5.3.3, which is resolved (with its dependencies)
#   from Maven Central into target/lib; compiled into target/classes.
# * `build.sh grpc`: src-grpc/rmqbench with src/rmqbench/Stats.java on rocketmq-client-java 5.0.8 as
#   compat_tests/java/grpc5 resolves it (scripts/setup-java.sh, run here when that target/lib is
#   missing: no Maven set-up of its own); compiled into target/grpc-classes.
# Run by `python -m bench.side_by_side` when needed (the gRPC one only for its gRPC cases).
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = grpc ]; then
  grpc_lib=../../compat_tests/java/grpc5/target/lib
  sources=(src/rmqbench/Stats.java src-grpc/rmqbench/*.java)
  stamp_value=$(cat ../../compat_tests/java/grpc5/pom.xml "${sources[@]}" | sha1sum | cut -c1-12)
  if [ -f target/.stamp-grpc ] && [ "$(cat target/.stamp-grpc)" = "$stamp_value" ] && [ -d "$grpc_lib" ]; then
    exit 0
  fi
  if [ ! -d "$grpc_lib" ]; then
    bash ../../scripts/setup-java.sh
  fi
  rm -rf target/grpc-classes && mkdir -p target/grpc-classes
  javac -nowarn -d target/grpc-classes -cp "$grpc_lib/*" "${sources[@]}"
  echo "$stamp_value" > target/.stamp-grpc
  echo "bench/java: gRPC load driver built against rocketmq-client-java 5.0.8"
  exit 0
fi
stamp_value=$(cat pom.xml src/rmqbench/*.java | sha1sum | cut -c1-12)
if [ -f target/.stamp ] && [ "$(cat target/.stamp)" = "$stamp_value" ]; then
  exit 0
fi
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib
rm -rf target/classes && mkdir -p target/classes
javac -nowarn -d target/classes -cp "target/lib/*" src/rmqbench/*.java
echo "$stamp_value" > target/.stamp
echo "bench/java: load driver built against rocketmq-client 5.3.3"
