#!/usr/bin/env bash
# Set up (idempotent) and run the main job on the embedded defaults: the offline miniature
# of the mission (bundled problems, bubblewrap sandbox, local backend): a tiny teacher SFT'd
# on the bundled references, a weak tiny student, on-policy distillation and RL beside it,
# pass rates from the real simulator, and a plot. Every stage resumes from runs/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
# The main job grades in bubblewrap: no Docker engine is started for it (NO_DOCKER=0 to have one).
NO_DOCKER=${NO_DOCKER:-1} bash scripts/setup.sh
.venv/bin/rtl-train demo --out runs/demo "$@"
# The docs show this job's figures (docs/figures/main_job.json): say so when they drifted.
.venv/bin/python scripts/docs_figures.py --against runs/demo/summary.json \
  || echo "[main] the docs' figures are not this run's: see above"
