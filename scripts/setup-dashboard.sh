# Builds Apache rocketmq-dashboard (not published on Maven Central) from a git mirror at its newest
# release tag, and installs Debian's chromium and chromium-driver when missing;
# compat_tests/test_dashboard_compat.py drives the two. The mirror: $DASHBOARD_MIRROR if set (.ci/run
# sets it where the machine keeps one), else a bare clone from GitHub kept in the cache.
# The jar is cached outside the repository, per commit: ~/.cache/rocketmq-gateway/dashboard/<commit>/
# rocketmq-dashboard.jar, and the build is skipped when that jar exists. The UI (frontend-new/) is
# built with the system's npm from the npm registry; the pom's frontend-maven-plugin (which would
# download its own Node) is skipped with its skip.installnodenpm / skip.npm properties, and the pom's
# antrun step copies the built UI into the jar's classes/public, where Spring Boot serves it.
set -euo pipefail
CACHE=${DASHBOARD_CACHE:-$HOME/.cache/rocketmq-gateway/dashboard}
MIRROR=${DASHBOARD_MIRROR:-$CACHE/rocketmq-dashboard.git}
if [ -z "${DASHBOARD_MIRROR:-}" ]; then
  if [ ! -d "$MIRROR" ]; then
    mkdir -p "$CACHE"
    git clone -q --bare https://github.com/apache/rocketmq-dashboard "$MIRROR.tmp" 2>/dev/null &&
      mv "$MIRROR.tmp" "$MIRROR" || rm -rf "$MIRROR.tmp"
  fi
fi
if [ ! -d "$MIRROR" ]; then
  echo "setup-dashboard: no rocketmq-dashboard git mirror at $MIRROR (DASHBOARD_MIRROR names one; unset, GitHub is tried)" >&2
  exit 1
fi
tag=$(git -C "$MIRROR" tag --list 'rocketmq-dashboard-*' | sort -V | tail -1)
commit=$(git -C "$MIRROR" rev-list -n1 "$tag")
out=$CACHE/$commit
if [ ! -f "$out/rocketmq-dashboard.jar" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  log=$out.log
  mkdir -p "$CACHE"
  git -C "$MIRROR" archive "$commit" | tar -x -C "$work"
  if ! { (cd "$work/frontend-new" && npm ci --no-audit --no-fund --replace-registry-host=always &&
      CI=false GENERATE_SOURCEMAP=false npm run build) >"$log" 2>&1 &&
    (cd "$work" && mvn -B -q -DskipTests -Dskip.installnodenpm -Dskip.npm -Drat.skip=true -Dcheckstyle.skip=true \
      -Djacoco.skip=true package) >>"$log" 2>&1; }; then
    tail -30 "$log" >&2
    echo "setup-dashboard: building rocketmq-dashboard $tag failed ($log)" >&2
    exit 1
  fi
  jar=$(ls "$work"/target/rocketmq-dashboard-*.jar | grep -v -e sources -e original | head -1)
  mkdir -p "$out.tmp"
  cp "$jar" "$out.tmp/rocketmq-dashboard.jar"
  echo "$tag" >"$out.tmp/TAG"
  rm -rf "$out"
  mv "$out.tmp" "$out"
fi
# The release's UI sends every API call to the hard-coded origin http://localhost:8082
# (frontend-new/src/api/remoteApi/remoteApi.js), so a dashboard on any other port shows no data.
# The built script in the jar is rewritten once to call its own origin; the other entries of the
# Spring Boot jar are copied as they are (its nested jars must stay stored, uncompressed).
if [ ! -f "$out/same-origin" ]; then
  python3 - "$out/rocketmq-dashboard.jar" <<'PY'
import shutil
import sys
import zipfile

jar = sys.argv[1]
origin = b"http://localhost:8082"
with zipfile.ZipFile(jar) as src, zipfile.ZipFile(jar + ".tmp", "w") as dst:
    for info in src.infolist():
        data = src.read(info)
        if info.filename.startswith("BOOT-INF/classes/public/static/js/") and origin in data:
            data = data.replace(origin, b"")
        dst.writestr(info, data)
shutil.move(jar + ".tmp", jar)
PY
  touch "$out/same-origin"
fi
ln -sfn "$out" "$CACHE/current"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
  log=$(mktemp)
  if ! { $SUDO apt-get install -y --no-install-recommends chromium chromium-driver >"$log" 2>&1 ||
    { $SUDO apt-get update >>"$log" 2>&1 &&
      $SUDO apt-get install -y --no-install-recommends chromium chromium-driver >>"$log" 2>&1; }; }; then
    tail -20 "$log" >&2
    rm -f "$log"
    echo "setup-dashboard: apt-get install chromium chromium-driver failed" >&2
    exit 1
  fi
  rm -f "$log"
fi
