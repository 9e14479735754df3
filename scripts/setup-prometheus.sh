# Installs Debian's `prometheus` package (the server the dashboard test runs, /usr/bin/prometheus)
# when it is missing. The package's own daemon is never left running: a policy-rc.d answering 101
# ("action forbidden") keeps dpkg from starting it during the install, and should an init system
# have started it anyway, it is stopped and disabled. The test starts its own Prometheus with its
# own configuration on a free loopback port.
set -euo pipefail
if [ -x /usr/bin/prometheus ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
policy=/usr/sbin/policy-rc.d
if [ -e "$policy" ]; then
  had_policy=1
else
  had_policy=0
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
fi
cleanup() {
  if [ "$had_policy" = 0 ]; then
    $SUDO rm -f "$policy"
  fi
}
trap cleanup EXIT
log=$(mktemp)
if ! { $SUDO apt-get install -y --no-install-recommends prometheus >"$log" 2>&1 ||
  { $SUDO apt-get update >>"$log" 2>&1 &&
    $SUDO apt-get install -y --no-install-recommends prometheus >>"$log" 2>&1; }; }; then
  tail -20 "$log" >&2
  rm -f "$log"
  echo "setup-prometheus: apt-get install prometheus failed" >&2
  exit 1
fi
rm -f "$log"
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
if [ -x /etc/init.d/prometheus ]; then
  $SUDO /etc/init.d/prometheus stop >/dev/null 2>&1 || true
fi
