#!/usr/bin/env bash
# Resolves the real RocketMQ Java clients (4.9.8 and 5.3.3) from Maven Central into
# compat_tests/java/target/lib-<version>/, compiles the capture scenario against each, and resolves
# the reference Apache RocketMQ 5.3.3 broker, namesrv and tools into compat_tests/java/reference/target/lib/.
# Idempotent: skipped when the sources and pom did not change since the last run.
set -euo pipefail
cd "$(dirname "$0")/../compat_tests/java"
stamp_value=$(cat pom.xml reference/pom.xml src/rmqcompat/*.java | sha1sum | cut -c1-12)
if [ -f target/.stamp ] && [ "$(cat target/.stamp)" = "$stamp_value" ]; then
  exit 0
fi
for v in 4.9.8 5.3.3; do
  mvn -q -B dependency:copy-dependencies -Dclient.version="$v" -DoutputDirectory="target/lib-$v"
  mkdir -p "target/classes-$v"
  javac -nowarn -d "target/classes-$v" -cp "target/lib-$v/*" src/rmqcompat/*.java
done
(cd reference && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib)
mkdir -p target && echo "$stamp_value" > target/.stamp
echo "java: RocketMQ clients 4.9.8 and 5.3.3 and the reference broker 5.3.3 resolved, scenario compiled"
