#!/usr/bin/env bash
# Resolves the Spring Boot 3 application of compat_tests/test_spring_compat.py (compat_tests/spring/pom.xml:
# rocketmq-spring-boot-starter 2.3.5 on Spring Boot 3.4.5) into compat_tests/spring/target/lib/ and
# compiles its sources into target/classes/. Idempotent: skipped when the pom and the sources did not
# change since the last run (the stamp hashes both), as scripts/setup-java.sh.
set -euo pipefail
cd "$(dirname "$0")/../compat_tests/spring"
stamp_value=$(cat pom.xml src/main/java/rmqspring/*.java | sha1sum | cut -c1-12)
if [ -f target/.stamp ] && [ "$(cat target/.stamp)" = "$stamp_value" ]; then
  exit 0
fi
rm -rf target/lib
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib
# a fresh directory swapped in at the end, so a JVM starting meanwhile never sees half of it
rm -rf target/classes.new && mkdir -p target/classes.new
javac -nowarn -d target/classes.new -cp "target/lib/*" src/main/java/rmqspring/*.java
rm -rf target/classes && mv target/classes.new target/classes
echo "$stamp_value" > target/.stamp
echo "spring: rocketmq-spring-boot-starter 2.3.5 on Spring Boot 3.4.5 resolved, application compiled"
