#!/usr/bin/env bash
# Builds a local base image (Debian bookworm with python3) without any container registry:
# debootstrap fetches the packages from the Debian mirror apt already uses, `docker import` turns
# the root file system into an image. For machines that cannot pull `python:3.11-slim-bookworm`;
# the gateway image is then built with `--build-arg BASE_IMAGE=<this image>`.
#
#   docker/build-base.sh [IMAGE]          # default rmq-gateway-base:bookworm
#
# BASE_LABEL=key=value adds a label (scripts/setup-docker.sh stores its cache key there).
# Needs root (debootstrap) and a running Docker engine; about a minute and ~160 MB.
set -euo pipefail
IMAGE=${1:-rmq-gateway-base:bookworm}
SUITE=bookworm
PACKAGES=python3,python3-venv,ca-certificates
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then
  echo "build-base.sh: debootstrap needs root" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
fi

root=$(mktemp -d /tmp/rmq-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "build-base.sh: debootstrap $SUITE ($PACKAGES) into $root"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 || {
  tail -30 "$root.log" >&2
  echo "build-base.sh: debootstrap failed (log: $root.log)" >&2
  exit 1
}
rm -f "$root.log"
# What an image does not need: package caches, lists, docs and man pages.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*

changes=(--change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]')
if [ -n "${BASE_LABEL:-}" ]; then
  changes+=(--change "LABEL $BASE_LABEL")
fi
tar -C "$root" -c . | docker import "${changes[@]}" - "$IMAGE" >/dev/null
echo "build-base.sh: $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
