#!/usr/bin/env bash
# Make sure your own rootless Podman service answers, for the podman sandbox backend
# (cvdp_gym/sandbox/podman.py). Run it as yourself, not root: no daemon runs as root.
# Idempotent: does nothing when the socket already answers. Otherwise checks what rootless
# Podman needs (podman, newuidmap, your subordinate ids), picks a storage driver that works
# here the first time (native overlay when the kernel allows it, else vfs) and an OCI runtime
# that can start containers under this host's cgroups (crun refuses a hybrid layout whose v2
# hierarchy offers controllers; runc is taken there: cvdp_gym/sandbox/oci_runtime.py), then starts
#   podman --runtime RUNTIME system service --time=0 unix://$SOCKET
# in the background (setsid; it outlives this script) and waits for it. Prints one line;
# exit 1 when no service could be started (with what to ask an administrator for).
#   PODMAN_SOCKET=/path/podman.sock PODMAN_LOG=/path/to.log PODMAN_WAIT_S=30 bash scripts/podman.sh
#   PODMAN_RUNTIME=runc bash scripts/podman.sh     # choose the runtime yourself
# The default socket, $XDG_RUNTIME_DIR/podman/podman.sock, is where cvdp-gym looks (and
# $CONTAINER_HOST or $DOCKER_HOST when set); stop the service with: kill "$(cat $PIDFILE)".
set -euo pipefail

if [ "$(id -u)" -eq 0 ]; then
  echo "[podman] run this as the user whose rootless Podman service it starts, not as root" >&2
  exit 1
fi
RUNTIME=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}
if [ ! -d "$RUNTIME" ] || [ ! -w "$RUNTIME" ]; then
  RUNTIME=/tmp/podman-run-$(id -u)  # what Podman itself uses without a runtime directory
  mkdir -p -m 700 "$RUNTIME"
fi
export XDG_RUNTIME_DIR=$RUNTIME
SOCKET=${PODMAN_SOCKET:-$RUNTIME/podman/podman.sock}
LOG=${PODMAN_LOG:-$RUNTIME/cvdp-gym-podman.log}
PIDFILE=${PODMAN_PIDFILE:-$RUNTIME/cvdp-gym-podman.pid}
WAIT_S=${PODMAN_WAIT_S:-30}

answers() { podman --url "unix://$SOCKET" version >/dev/null 2>&1; }
installed() { PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1; }
# Why crun cannot start a container under this host's cgroups ("" when it can): the same rule
# as oci_runtime.refusal.
crun_refusal() {
  local offered
  [ -e /sys/fs/cgroup/cgroup.controllers ] && return 0  # pure v2
  offered=$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null || true)
  if [ -n "$offered" ]; then
    echo "crun refuses hybrid cgroups whose v2 hierarchy (/sys/fs/cgroup/unified) offers controllers ($offered)"
  fi
}
ADMIN_FIX="ask an administrator to install runc (apt-get install runc), or to mount a pure cgroup v1 or v2 layout"

if ! command -v podman >/dev/null 2>&1; then
  echo "[podman] podman is missing; as root: apt-get install -y podman uidmap" >&2
  exit 1
fi
if answers; then
  running=$(podman --url "unix://$SOCKET" info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || echo "?")
  if [ "$running" = crun ] && [ -n "$(crun_refusal)" ]; then
    echo "[podman] the service at unix://$SOCKET runs crun, which cannot start containers here: $(crun_refusal); stop it, then run this script again (it starts one with runc)" >&2
    exit 1
  fi
  echo "[podman] service already running: unix://$SOCKET (runtime $running)"
  exit 0
fi
if ! command -v newuidmap >/dev/null 2>&1; then
  echo "[podman] newuidmap is missing; as root: apt-get install -y uidmap" >&2
  exit 1
fi
me=$(id -un)
for file in /etc/subuid /etc/subgid; do
  if ! grep -q "^\($me\|$(id -u)\):" "$file" 2>/dev/null; then
    echo "[podman] $me has no subordinate ids in $file; as root: usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $me" >&2
    exit 1
  fi
done
if [ ! -w /dev/null ]; then
  echo "[podman] /dev/null is not writable by you (Podman's conmon needs it); as root: chmod 666 /dev/null" >&2
  exit 1
fi

# The storage driver, chosen once (Podman records it with the storage): native overlay
# (kernel >= 5.13, no fuse-overlayfs needed) when it works here, else vfs (slow: a full
# copy per container layer).
CONF=${XDG_CONFIG_HOME:-$HOME/.config}/containers/storage.conf
GRAPH=${XDG_DATA_HOME:-$HOME/.local/share}/containers/storage
if [ ! -f "$CONF" ] && [ ! -d "$GRAPH" ]; then
  mkdir -p "$(dirname "$CONF")"
  printf '[storage]\ndriver = "overlay"\n' > "$CONF"
  if ! podman info >/dev/null 2>&1; then
    podman system reset --force >/dev/null 2>&1 || true
    printf '[storage]\ndriver = "vfs"\n' > "$CONF"
  fi
fi

# The OCI runtime: Podman's default unless it cannot start containers under this host's cgroups.
RUNTIME=${PODMAN_RUNTIME:-}
if [ -z "$RUNTIME" ]; then
  RUNTIME=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || true)
  why=""
  [ "$RUNTIME" = crun ] && why=$(crun_refusal)
  if [ -n "$why" ]; then
    if installed runc; then
      RUNTIME=runc
      echo "[podman] $why: starting the service with runc" >&2
    else
      echo "[podman] no OCI runtime here can start containers: $why, and runc is not installed; $ADMIN_FIX" >&2
      exit 1
    fi
  fi
fi
runtime_flag=()
[ -n "$RUNTIME" ] && runtime_flag=(--runtime "$RUNTIME")

mkdir -p "$(dirname "$SOCKET")"
rm -f "$SOCKET"
setsid nohup podman "${runtime_flag[@]}" system service --time=0 "unix://$SOCKET" >>"$LOG" 2>&1 </dev/null &
echo $! > "$PIDFILE"
for _ in $(seq 1 "$((WAIT_S * 2))"); do
  if answers; then
    driver=$(podman --url "unix://$SOCKET" info --format '{{.Store.GraphDriverName}}' 2>/dev/null || echo "?")
    echo "[podman] service started: unix://$SOCKET (pid $(cat "$PIDFILE"), runtime ${RUNTIME:-default}, storage $driver, log $LOG)"
    exit 0
  fi
  sleep 0.5
done
echo "[podman] no Podman service answered within ${WAIT_S}s at unix://$SOCKET; see $LOG" >&2
exit 1
