#!/usr/bin/env bash
# Resolves the testcontainers modules of docker/testcontainers/ so their compat tests
# (compat_tests/test_container_java.py, test_container_go.py) run offline and download nothing:
#   java/  the Maven build (module + JUnit 5 and Spring Boot examples): every dependency, the
#          compiled test classes and surefire's JUnit platform provider (a test run that selects
#          no test resolves the provider without Docker);
#   go/    the Go module graph (testcontainers-go, the RocketMQ 5.x Go client) from the Go module
#          proxy, and the example's test binary compiled once into Go's build cache.
# Idempotent: skipped when neither the poms, go.mod/go.sum nor the sources changed since the last
# run (the stamp hashes them), as scripts/setup-java.sh.
set -euo pipefail
cd "$(dirname "$0")/../docker/testcontainers"
stamp=java/target/.setup-stamp
stamp_value=$(find java go -type f \( -name pom.xml -o -name '*.java' -o -name '*.go' -o -name go.mod -o -name go.sum \) \
  -not -path '*/target/*' | LC_ALL=C sort | xargs cat | sha1sum | cut -c1-12)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_value" ]; then
  exit 0
fi
(cd java && mvn -q -B test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false)
if ! command -v go >/dev/null; then
  # no stamp: the next run tries again; compat_tests/test_container_go.py fails, saying so
  echo "setup-testcontainers: the Go toolchain is missing; the Go module is not prepared" >&2
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd go && GOFLAGS=-mod=readonly go test -c -o "$tmp/example.test" .)
mkdir -p java/target && echo "$stamp_value" > "$stamp"
echo "testcontainers: Java (testcontainers 1.21.3, RocketMQ 5.3.3, Spring Boot 3.4.5) and Go (testcontainers-go, rocketmq-clients v5.1.4) resolved and compiled"
