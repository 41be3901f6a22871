"""Score rollouts with NeMo-Gym's own CVDP report (run by ``test_nemo_gym_report`` in the
sandbox, under the toolchain root's Python 3.14, like ``nemo_gym_check.py``).

``python3 nemo_gym_report.py CVDP_ROOT ROLLOUTS.jsonl OUT``: ``CVDP_ROOT`` is NeMo-Gym's
``resources_servers/cvdp`` from the ``nemo-gym`` wheel; its ``scripts/cvdp_report.py`` is
imported as its own ``scripts/cvdp_pass_at_k_report.py`` imports it, and each rollout is
reported on its own, as that script reports each rollout index: ``build_collateral`` then
``Report``. Prints one JSON line, per rollout in order: ``{"task_id", "passed_problems",
"failed_problems", "test_results", "status"}`` (the report's problem counts, its test
entries' results, and its ``run.log`` status: ``PASS`` or ``FAIL``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

#: Keys of a ``Report``'s ``categories`` that are not categories.
NOT_CATEGORIES = ("metadata", "test_details")
DIFFICULTIES = ("easy", "medium", "hard")


def report(rollout: str, folder: Path) -> dict[str, Any]:
    from cvdp_report import Report, build_collateral

    folder.mkdir(parents=True)
    (folder / "rollouts.jsonl").write_text(rollout + "\n")
    raw = build_collateral(str(folder / "rollouts.jsonl"), folder / "collateral")
    tables = [c[d] for name, c in Report(raw, prefix=str(folder)).categories.items() if name not in NOT_CATEGORIES for d in DIFFICULTIES]
    status = re.search(r"\[(PASS|FAIL)\]", (folder / "collateral" / "run.log").read_text())
    return {
        "task_id": json.loads(rollout)["task_id"],
        "passed_problems": sum(t["Passed Problems"] for t in tables),
        "failed_problems": sum(t["Failed Problems"] for t in tables),
        "test_results": [test["result"] for entry in raw.values() for test in entry["tests"]],
        "status": status.group(1) if status else None,
    }


def main(root: str, rollouts: str, out: str) -> None:
    sys.path[:0] = [root, f"{root}/scripts"]  # as cvdp_pass_at_k_report.py sets it
    rows = [line for line in Path(rollouts).read_text().splitlines() if line.strip()]
    print(json.dumps([report(row, Path(out) / f"rollout-{i}") for i, row in enumerate(rows)]))


if __name__ == "__main__":
    main(*sys.argv[1:4])
