"""Lint gate: Verilator, every warning enabled, must accept the design as it stands."""

import os
import subprocess


def test_lint():
    sources = os.environ["VERILOG_SOURCES"].split()
    command = ["verilator", "--lint-only", "-Wall", "-Wno-EOFNEWLINE", "/src/lint_config.vlt", *sources]
    process = subprocess.run(command, capture_output=True, text=True)
    report = process.stdout + process.stderr
    with open("lint_results.log", "w") as log:
        log.write(report)
    findings = [line.strip() for line in report.splitlines() if line.startswith(("%Warning", "%Error")) and "Exiting due to" not in line]
    assert process.returncode == 0, "Verilator lint found: " + " | ".join(findings[:4])
