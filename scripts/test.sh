#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite, slow end-to-end tests included.
# A Docker engine that setup had to start for the tests is stopped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
PIDFILE=${DOCKERD_PIDFILE:-/var/run/cvdp-gym-dockerd.pid}
# Which run of this script started the engine: one killed before it could stop it leaves its
# pid there, and the engine is then this run's to stop.
OWNERFILE=${PIDFILE%.pid}.owner
engine_before=0
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  engine_before=1
  if [ -f "$OWNERFILE" ] && ! kill -0 "$(cat "$OWNERFILE")" 2>/dev/null; then
    echo "[test] the Docker engine a killed earlier run started is this run's to stop"
    engine_before=0
  fi
fi
stop_engine() {
  if [ "$engine_before" = 0 ] && [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    echo "[test] stopping the Docker engine setup started (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    rm -f "$OWNERFILE"
  fi
}
trap stop_engine EXIT
bash scripts/setup.sh
if [ "$engine_before" = 0 ] && [ -f "$PIDFILE" ]; then echo $$ > "$OWNERFILE"; fi
# The HTML report's test opens it in headless Chromium (Debian's package; about 10 s, 113 MB).
# Only the tests need it, so setup.sh (and the main job) does not install it.
if ! command -v chromium >/dev/null 2>&1; then
  echo "[test] installing chromium for the report's headless-browser test"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null \
    || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
    || echo "[test] chromium could not be installed: the headless-browser test will be skipped"
fi
# The Slurm recipes' test starts a one-node Slurm on loopback (Debian's slurm-wlm 22.05 and
# munge, about 13 MB). Only the tests need them, so setup.sh does not install them.
if ! dpkg -s slurm-wlm munge >/dev/null 2>&1; then
  echo "[test] installing slurm-wlm and munge for the Slurm recipes' test"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
    || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null; } \
    || echo "[test] slurm-wlm could not be installed: the Slurm recipes' test cannot run"
fi
# The command-line agents' tests install codex from npm (and mini-swe-agent with pip) into
# ~/.cache/cvdp-gym/agents, once; npm comes with Node.js where it is installed.
if ! command -v npm >/dev/null 2>&1; then
  echo "[test] installing npm for the command-line agents' tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null \
    || echo "[test] npm could not be installed: the codex tests will be skipped"
fi
.venv/bin/cvdp-gym agents install mini-swe-agent codex \
  || echo "[test] the agents could not be installed: their tests will be skipped"
# NeMo-Gym's own models (Python >= 3.13) for the test that validates the service's traffic
# with them in the sandbox's Python 3.14: about 50 MB fetched, a few seconds; kept in the cache.
.venv/bin/python scripts/nemo_gym_models.py \
  || echo "[test] NeMo-Gym's models could not be built: their test will be skipped"
# Harbor's task loader and verifier (Python >= 3.12) and cvdp-gym's dependencies for the root's
# Python 3.14, for the Harbor export test: about 130 MB fetched, ~30 s; kept in the cache.
.venv/bin/python scripts/harbor_models.py \
  || echo "[test] Harbor's models could not be built: its test will be skipped"
# veRL 0.9.1 (transformers<5.11) in a venv of its own, for its integration test: torch CPU +
# verl with its dependencies, ~1.9 GB, ~3 min the first time; kept in the cache.
.venv/bin/python scripts/verl_env.py \
  || echo "[test] the veRL venv could not be built: its test will be skipped"
.venv/bin/ruff check cvdp_gym rtl_trainer tests scripts
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
