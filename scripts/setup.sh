#!/usr/bin/env bash
# Idempotent setup on a fresh Debian/Ubuntu machine: system packages (bubblewrap, mmdebstrap,
# and the host fallback's Icarus Verilog and Yosys), the project's virtual environment
# (.venv), the pinned simulation root (Debian forky: Icarus 13, Verilator, Yosys, cocotb
# 2.0.1 and 1.9.2 environments; Debian trixie's Icarus 12 beside it for VerilogEval), the
# quality tools beside it (OpenSTA, nextpnr-ice40), the host fallback's environments, and, when a Docker engine
# can run here, the Docker backend's stand-in image. Safe to run again: it only builds what
# is missing, and an interrupted root build resumes.
#   EXTRAS=dev bash scripts/setup.sh     # choose the pip extras (default: dev,train)
#   NO_DOCKER=1 bash scripts/setup.sh    # skip the Docker engine and image
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(bubblewrap mmdebstrap iverilog yosys util-linux perl make g++ python3-venv uidmap podman runc)
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
  case ",$EXTRAS," in
    *,dev,*|*,tinker-cookbook,*)
      # Its tml-renderers>=0.4.1 requirement is not on PyPI (see pyproject.toml); the rest
      # of its dependencies come with the tinker-cookbook extra.
      .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "tinker-cookbook==0.6.1" ;;
  esac
  .venv/bin/python -c "import cvdp_gym"
  echo "$want" > "$stamp"
fi

echo "[setup] simulation root (pinned Icarus 13 toolchain, Icarus 12 beside it), quality tools and host fallback environments"
.venv/bin/cvdp-gym toolchain install
.venv/bin/cvdp-gym toolchain install --toolchain host

if [ "${NO_DOCKER:-0}" = "0" ]; then
  if bash scripts/dockerd.sh; then
    echo "[setup] Docker stand-in image: $(.venv/bin/cvdp-gym toolchain docker-image)"
  else
    echo "[setup] no Docker engine: the docker backend's tests will be skipped"
  fi
fi
.venv/bin/cvdp-gym doctor
