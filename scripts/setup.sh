#!/usr/bin/env bash
# Idempotent setup on a fresh Debian/Ubuntu machine: system packages (bubblewrap, Icarus
# Verilog, Yosys), the project's virtual environment (.venv), and the pinned simulation
# environments the harnesses run in. Safe to run again: it only installs what is missing.
#   EXTRAS=dev bash scripts/setup.sh     # choose the pip extras (default: dev,train)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(bubblewrap iverilog yosys util-linux perl make g++)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$PYTHON" -m venv .venv
fi
EXTRAS=${EXTRAS:-dev,train}
stamp=.venv/.cvdp-gym-setup
want="$(cat pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing the project into .venv (extras: $EXTRAS)"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
  .venv/bin/python -c "import cvdp_gym" 
  echo "$want" > "$stamp"
fi

echo "[setup] simulation environments"
.venv/bin/cvdp-gym toolchain install
.venv/bin/cvdp-gym doctor
