#!/usr/bin/env bash
# Makes the gateway's container image available for the container tests, idempotently:
#   1. a Docker engine: if none answers, installs docker.io (Debian) and starts dockerd;
#   2. the base image (docker/build-base.sh: debootstrap + docker import, no registry), rebuilt
#      only when build-base.sh changed (cache key in the image label org.rocketmq-gateway.key);
#   3. docker compose (v2) or docker-compose (Debian's v1), installed if neither is there;
#   4. the gateway image (docker/Dockerfile) from a wheelhouse built here, rebuilt only when the
#      sources, pyproject.toml, docker/ or the base image changed (same label).
# Fails (non-zero, with the reason) when any step cannot be done: the container tests must fail,
# not skip, on a machine without Docker. Needs root only to install packages or start dockerd.
#
#   RMQ_GATEWAY_IMAGE  image to build            (default rmq-gateway:local)
#   RMQ_BASE_IMAGE     base image; when set, used as is (e.g. python:3.11-slim-bookworm) instead
#                      of the local debootstrap one (default rmq-gateway-base:bookworm, built here)
#   DOCKERD_LOG        dockerd's log when started here (default /var/log/rmq-dockerd.log)
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${RMQ_GATEWAY_IMAGE:-rmq-gateway:local}
LOCAL_BASE=rmq-gateway-base:bookworm
BASE=${RMQ_BASE_IMAGE:-$LOCAL_BASE}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/rmq-dockerd.log}
ENGINE_WAIT_S=60
LABEL=org.rocketmq-gateway.key

say() { echo "setup-docker: $*"; }
die() { echo "setup-docker: FAILED: $*" >&2; exit 1; }

ensure_engine() {
  if docker info >/dev/null 2>&1; then
    return
  fi
  [ "$(id -u)" = 0 ] || die "no Docker engine answers and not root (cannot install or start dockerd)"
  if ! command -v dockerd >/dev/null; then
    say "installing docker.io"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -q && apt-get install -y -q docker.io; } >/tmp/rmq-docker-apt.log 2>&1 ||
      { tail -20 /tmp/rmq-docker-apt.log >&2; die "apt-get install docker.io failed"; }
  fi
  command -v docker >/dev/null || die "docker CLI missing after installing docker.io"
  say "starting dockerd (log: $DOCKERD_LOG)"
  setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local deadline=$((SECONDS + ENGINE_WAIT_S))
  until docker info >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -20 "$DOCKERD_LOG" >&2
      die "dockerd did not answer within ${ENGINE_WAIT_S} s"
    fi
    sleep 0.5
  done
}

image_key() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

ensure_base() {
  if [ "$BASE" != "$LOCAL_BASE" ]; then
    docker image inspect "$BASE" >/dev/null 2>&1 || docker pull "$BASE" || die "base image $BASE unavailable"
    return
  fi
  local key
  key=base-$(sha1sum docker/build-base.sh | cut -c1-12)
  if [ "$(image_key "$BASE")" = "$key" ]; then
    say "base image $BASE up to date"
    return
  fi
  say "building base image $BASE"
  BASE_LABEL="$LABEL=$key" bash docker/build-base.sh "$BASE" || die "base image build failed"
}

source_key() {
  # Everything the image is built from: the packages, pyproject.toml, docker/ and the base image.
  {
    find codec gateway namesrv broker store -name '*.py' -type f | LC_ALL=C sort | xargs sha1sum
    sha1sum pyproject.toml docker/Dockerfile docker/entrypoint.sh
    docker image inspect -f '{{.Id}}' "$BASE"
  } | sha1sum | cut -c1-12
}

ensure_gateway() {
  local key context py
  key=gw-$(source_key)
  if [ "$(image_key "$IMAGE")" = "$key" ]; then
    say "gateway image $IMAGE up to date"
    return
  fi
  say "building gateway image $IMAGE from $BASE"
  context=docker/.build/context
  rm -rf "$context"
  mkdir -p "$context/wheels"
  py=python3
  [ -x .venv/bin/pip ] && py=.venv/bin/python  # scripts/run's venv has no pip of its own
  "$py" -m pip wheel -q --wheel-dir "$context/wheels" . >/tmp/rmq-docker-wheels.log 2>&1 ||
    { tail -20 /tmp/rmq-docker-wheels.log >&2; die "pip wheel failed"; }
  cp docker/entrypoint.sh "$context/"
  docker build --network host --build-arg "BASE_IMAGE=$BASE" --label "$LABEL=$key" \
    -t "$IMAGE" -f docker/Dockerfile "$context" >/tmp/rmq-docker-build.log 2>&1 ||
    { tail -30 /tmp/rmq-docker-build.log >&2; die "docker build failed (log: /tmp/rmq-docker-build.log)"; }
  rm -rf docker/.build
  say "$IMAGE built ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
}

ensure_compose() {
  # docker/compose.yaml's test runs `docker compose` (v2 plugin) or Debian's docker-compose (v1).
  if docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; then
    return
  fi
  [ "$(id -u)" = 0 ] || die "neither docker compose nor docker-compose, and not root to install it"
  say "installing docker-compose"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose >/tmp/rmq-compose-apt.log 2>&1 ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-compose \
        >/tmp/rmq-compose-apt.log 2>&1; } ||
    { tail -20 /tmp/rmq-compose-apt.log >&2; die "apt-get install docker-compose failed"; }
}

ensure_engine
ensure_base
ensure_compose
ensure_gateway
