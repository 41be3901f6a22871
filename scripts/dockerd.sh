#!/usr/bin/env bash
# Make sure a Docker engine answers, for the docker sandbox backend (cvdp_gym/sandbox/docker.py).
# Idempotent: does nothing when `docker info` already works. Otherwise installs docker.io
# when dockerd is missing, then starts the engine: the docker service under systemd, else
# dockerd directly without iptables or a bridge (containers here only use --network none,
# and both need privileges that restricted machines lack). Prints one line; exit 1 when
# no engine could be started.
#   DOCKERD_LOG=/path/to.log DOCKERD_WAIT_S=30 bash scripts/dockerd.sh
set -euo pipefail

LOG=${DOCKERD_LOG:-/var/log/cvdp-gym-dockerd.log}
PIDFILE=${DOCKERD_PIDFILE:-/var/run/cvdp-gym-dockerd.pid}
WAIT_S=${DOCKERD_WAIT_S:-30}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi

answers() { docker info >/dev/null 2>&1; }
server_version() { docker version --format '{{.Server.Version}}' 2>/dev/null || echo unknown; }

if command -v docker >/dev/null 2>&1 && answers; then
  echo "[dockerd] engine already running (server $(server_version))"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 && [ ! -x /usr/sbin/dockerd ]; then
  echo "[dockerd] installing docker.io" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi
DOCKERD=$(command -v dockerd || echo /usr/sbin/dockerd)

started=""
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl start docker >/dev/null 2>&1 && started="systemctl start docker"
fi
if [ -z "$started" ]; then
  # setsid + nohup: the engine outlives this script and the shell that ran it.
  $SUDO setsid nohup "$DOCKERD" --iptables=false --bridge=none --pidfile "$PIDFILE" \
    >>"$LOG" 2>&1 </dev/null &
  started="dockerd (log $LOG, pidfile $PIDFILE)"
fi

for _ in $(seq 1 "$((WAIT_S * 2))"); do
  if answers; then
    pid=$(cat "$PIDFILE" 2>/dev/null || pgrep -xo dockerd || echo "?")
    echo "[dockerd] engine started by $started: server $(server_version), pid $pid"
    exit 0
  fi
  sleep 0.5
done
echo "[dockerd] no Docker engine answered within ${WAIT_S}s after $started; see $LOG" >&2
exit 1
