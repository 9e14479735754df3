#!/usr/bin/env bash
# Builds our load driver: resolves rocketmq-client 5.3.3 (and its dependencies) from Maven Central
# into target/lib and compiles src/rmqbench into target/classes. Idempotent: skipped when the pom and
# sources did not change since the last build. Run by `python -m bench.side_by_side` when needed.
set -euo pipefail
cd "$(dirname "$0")"
stamp_value=$(cat pom.xml src/rmqbench/*.java | sha1sum | cut -c1-12)
if [ -f target/.stamp ] && [ "$(cat target/.stamp)" = "$stamp_value" ]; then
  exit 0
fi
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib
rm -rf target/classes && mkdir -p target/classes
javac -nowarn -d target/classes -cp "target/lib/*" src/rmqbench/*.java
echo "$stamp_value" > target/.stamp
echo "bench/java: load driver built against rocketmq-client 5.3.3"
