#!/usr/bin/env bash
# Builds RocketMQ's own benchmark programs (Producer, BatchProducer, Consumer and the AclClient they
# use, from the example module at tag rocketmq-all-5.3.3; not on Maven Central) for
# `python -m bench.side_by_side --cases official_*`. The sources are exported from a git mirror of
# apache/rocketmq ($ROCKETMQ_MIRROR, which .ci/run sets where the machine keeps one; else a bare
# clone from GitHub kept in the cache) into
# ~/.cache/rocketmq-gateway/benchmark/<tag>/src, the 5.3.3 client and tools jars resolved from
# Maven Central into <that>/lib (pom.xml here), and everything compiled into <that>/classes.
# Idempotent: skipped when the stamp (tag and pom) matches. Prints the cache directory on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag=rocketmq-all-5.3.3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rocketmq-gateway/benchmark/$tag"
mirror="${ROCKETMQ_MIRROR:-$(dirname "$cache")/rocketmq.git}"
if [ -z "${ROCKETMQ_MIRROR:-}" ]; then
  if [ ! -d "$mirror" ]; then
    mkdir -p "$(dirname "$mirror")"
    git clone -q --bare --filter=blob:none https://github.com/apache/rocketmq "$mirror.tmp" 2>/dev/null &&
      mv "$mirror.tmp" "$mirror" || rm -rf "$mirror.tmp"
  fi
fi
bench_dir=example/src/main/java/org/apache/rocketmq/example/benchmark
programs=(Producer BatchProducer Consumer AclClient)
stamp_value=$(printf '%s\n' "$tag" "${programs[*]}" | cat - "$here/pom.xml" | sha1sum | cut -c1-12)
if [ -f "$cache/.stamp" ] && [ "$(cat "$cache/.stamp")" = "$stamp_value" ]; then
  echo "$cache"
  exit 0
fi
if ! git -C "$mirror" rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
  echo "official benchmark: no git mirror of apache/rocketmq with tag $tag at $mirror (set ROCKETMQ_MIRROR)" >&2
  exit 2
fi
mkdir -p "$cache"
rm -rf "$cache/src.new" && mkdir -p "$cache/src.new"
git -C "$mirror" archive "$tag" $(printf "$bench_dir/%s.java " "${programs[@]}") | tar -x -C "$cache/src.new"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$cache/lib" >&2
rm -rf "$cache/classes.new" && mkdir -p "$cache/classes.new"
javac -nowarn -d "$cache/classes.new" -cp "$cache/lib/*" "$cache/src.new/$bench_dir"/*.java
rm -rf "$cache/src" "$cache/classes"
mv "$cache/src.new" "$cache/src" && mv "$cache/classes.new" "$cache/classes"
echo "$stamp_value" > "$cache/.stamp"
echo "official benchmark: $tag ${programs[*]} compiled into $cache/classes" >&2
echo "$cache"
