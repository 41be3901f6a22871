#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite, slow end-to-end tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check cvdp_gym tests scripts
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
