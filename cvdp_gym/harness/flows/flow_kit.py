"""What a flow is built from: the ``Flow`` protocol and the harness, gate and sandbox names a flow uses.

A flow (a benchmark plug-in's ``flow`` part, the equivalence grader's, the verification
tasks') imports what it runs an answer with from here, in one place, never from
:mod:`cvdp_gym.harness.flows.catalog` or :mod:`cvdp_gym.harness.runner`, whose flow table
loads it (a flow importing its loader is an import cycle: ``scripts/import_graph.py`` counts
the table's load as an edge). The names stay defined where they live (the results, the test
bench's run, the isolation of an answer's names, the gate, the sandbox); this module is the
set a flow needs, so a third party writes a flow against one module.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from cvdp_gym.data.problems import Problem
from cvdp_gym.gate import check
from cvdp_gym.gate.compiled_calls import CALLS_FILE, calls_command
from cvdp_gym.harness.isolation import Isolated, isolate
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    HARNESS_ERROR,
    REACH_IN,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
    UNDECIDED,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    TestCounts,
)
from cvdp_gym.harness.testbench import (
    compiled_check,
    fed_through_a_pipe,
    instrument,
    isolated_run,
    new_secret,
    read_log,
    run_script,
)
from cvdp_gym.sandbox.base import Limits, Sandbox

__all__ = [
    "BUILD_ERROR",
    "CALLS_FILE",
    "HARNESS_ERROR",
    "REACH_IN",
    "RESOURCE_LIMIT",
    "TEST_FAILURE",
    "TIMEOUT",
    "UNDECIDED",
    "UNSUPPORTED",
    "Flow",
    "HarnessResult",
    "Isolated",
    "Limits",
    "Problem",
    "Sandbox",
    "ServiceResult",
    "TestCounts",
    "calls_command",
    "check",
    "compiled_check",
    "fed_through_a_pipe",
    "instrument",
    "isolate",
    "isolated_run",
    "new_secret",
    "read_log",
    "run_script",
]


class Flow(Protocol):
    """Runs one answer to a benchmark problem and judges it as the benchmark does.

    Optional attributes, read by the runner when present: ``answer_kind``, the kind of answer
    it grades, whose allowlist the answer gate applies (:mod:`cvdp_gym.gate.system_tasks`;
    ``"design"`` when a flow does not say; None: only the answer's directives are read);
    ``supplied(problem) -> {path: text}``, the files it compiles beside the answer (the gate
    counts their definitions as given); ``seeded = True``, its verdict depends on the run's
    ``seed`` (it draws at random from it), so the result records the seed, which reproduces it."""

    name: str

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits, keep_dir: Path | None = None,
        seed: int | None = None,
    ) -> HarnessResult:
        """Run ``files`` (the answer) on ``problem`` in ``sandbox``. ``keep_dir``: where to keep the
        run's files; ``seed``: the run's seed (every flow is given it), which a flow that draws at
        random draws from (a fresh draw when None) and any other flow ignores."""
        ...
