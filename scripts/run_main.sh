#!/usr/bin/env bash
# Set up (idempotent) and run the main job on the embedded defaults: every bundled problem's
# reference and known-wrong candidates through the sandboxed harness runner.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/cvdp-gym check bundled --jobs 2 --out runs/check-bundled.jsonl "$@"
