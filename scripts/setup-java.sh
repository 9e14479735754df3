#!/usr/bin/env bash
# Resolves the real RocketMQ Java clients (4.9.8 and 5.3.3) from Maven Central into
# compat_tests/java/target/lib-<version>/, compiles every src/rmqcompat/*.java (the scenario runner,
# one class per command, and the capture program) against each into target/classes-<version>/, and resolves
# the reference Apache RocketMQ 5.3.3 broker, namesrv, tools and proxy into compat_tests/java/reference/target/lib/,
# the second reference, 5.5.0's (reference55/pom.xml), into compat_tests/java/reference55/target/lib/,
# the 5.x gRPC client (grpc5/pom.xml) with its scenarios into grpc5/target/, and the 5.1 gRPC client
# (grpc51/pom.xml, lite topics) with its scenarios into grpc51/target/.
# Idempotent: each part is skipped when its sources and poms did not change since its last run.
# grpc51 comes first, with a stamp of its own (grpc51/target/.stamp hashes grpc51/pom.xml and
# grpc51/src/rmqgrpc51/*.java), so a change there rebuilds grpc51 alone; the rest shares
# target/.stamp (every other pom, every src/rmqcompat/*.java and grpc5/src/rmqgrpc/*.java).
# See compat_tests/java/README.md.
set -euo pipefail
cd "$(dirname "$0")/../compat_tests/java"
# The RocketMQ 5 gRPC client of the 5.1 line (rocketmq-client-java 5.1.0: LitePushConsumer,
# lite topics) and its scenarios.
grpc51_stamp=$(cat grpc51/pom.xml grpc51/src/rmqgrpc51/*.java | sha1sum | cut -c1-12)
if [ ! -f grpc51/target/.stamp ] || [ "$(cat grpc51/target/.stamp)" != "$grpc51_stamp" ]; then
  (cd grpc51 && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib)
  rm -rf grpc51/target/classes.new && mkdir -p grpc51/target/classes.new
  javac -nowarn -d grpc51/target/classes.new -cp "grpc51/target/lib/*" grpc51/src/rmqgrpc51/*.java
  rm -rf grpc51/target/classes && mv grpc51/target/classes.new grpc51/target/classes
  echo "$grpc51_stamp" > grpc51/target/.stamp
  echo "java: gRPC client 5.1.0 resolved, its lite scenarios compiled"
fi
stamp_value=$(cat pom.xml reference/pom.xml reference55/pom.xml src/rmqcompat/*.java grpc5/pom.xml grpc5/src/rmqgrpc/*.java | sha1sum | cut -c1-12)
if [ -f target/.stamp ] && [ "$(cat target/.stamp)" = "$stamp_value" ]; then
  exit 0
fi
for v in 4.9.8 5.3.3; do
  mvn -q -B dependency:copy-dependencies -Dclient.version="$v" -DoutputDirectory="target/lib-$v"
  # a fresh directory, swapped in at the end: no class of a removed source lingers, and a JVM
  # starting meanwhile sees the old or the new classes, never half of them
  rm -rf "target/classes-$v.new" && mkdir -p "target/classes-$v.new"
  javac -nowarn -d "target/classes-$v.new" -cp "target/lib-$v/*" src/rmqcompat/*.java
  rm -rf "target/classes-$v" && mv "target/classes-$v.new" "target/classes-$v"
done
(cd reference && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib)
(cd reference55 && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib)
# The RocketMQ 5 gRPC client (rocketmq-client-java 5.0.8) and its scenarios, apart from the above.
(cd grpc5 && mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib)
rm -rf grpc5/target/classes.new && mkdir -p grpc5/target/classes.new
javac -nowarn -d grpc5/target/classes.new -cp "grpc5/target/lib/*" grpc5/src/rmqgrpc/*.java
rm -rf grpc5/target/classes && mv grpc5/target/classes.new grpc5/target/classes
mkdir -p target && echo "$stamp_value" > target/.stamp
echo "java: RocketMQ clients 4.9.8, 5.3.3 and gRPC 5.0.8 and the reference brokers and proxies 5.3.3 and 5.5.0 resolved, scenarios compiled"
