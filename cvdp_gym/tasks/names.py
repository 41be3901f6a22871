"""The names every part of a verification task agrees on: the tasks, their flows, the files.

The posing (:mod:`.posing`), the prompts (:mod:`.prompts`) and the flows that grade the
answers all read them here, so a prompt never names a file its flow does not run."""

from __future__ import annotations

__all__ = [
    "ASSERTION",
    "ASSERTION_FLOW",
    "BENCH_FILE",
    "BENCH_TASKS",
    "BENCH_TOP",
    "COCOTB_FILE",
    "DESIGN",
    "DESIGN_FILE",
    "PROPERTIES_FILE",
    "TASKS",
    "TESTBENCH",
    "TESTBENCH_COCOTB",
    "TESTBENCH_FLOW",
    "VERIF_DIR",
]

DESIGN, TESTBENCH, TESTBENCH_COCOTB, ASSERTION = "design", "testbench", "testbench-cocotb", "assertion"
#: What a problem can be posed as: the design itself (the benchmark's own task), or a check of it.
TASKS = (DESIGN, TESTBENCH, TESTBENCH_COCOTB, ASSERTION)
#: The tasks whose answer is a test bench (Verilog or cocotb), graded by the same flow.
BENCH_TASKS = (TESTBENCH, TESTBENCH_COCOTB)
TESTBENCH_FLOW, ASSERTION_FLOW = "testbench-task", "assertion-task"
BENCH_FILE, BENCH_TOP, PROPERTIES_FILE, COCOTB_FILE = "tb.sv", "tb", "properties.sv", "test_tb.py"
#: The name the design's file has in every run (the reference and every mutant alike).
DESIGN_FILE = "design.sv"
#: Where an agentic episode's test bench or assertions go.
VERIF_DIR = "verif"
