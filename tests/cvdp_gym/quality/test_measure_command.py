"""``cvdp-gym quality measure``: one design's figures, and its score against a reference, from
the real flows in the real sandbox; a design that does not synthesise exits 1 with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.toolchain import quality_tools
from tests.support import missing

pytestmark = pytest.mark.sandbox

LIBERTY = str(Path(__file__).parents[2] / "fixtures" / "quality" / "tiny.lib")
AND8 = "module and8(input [7:0] a, input [7:0] b, output [7:0] y);\n  assign y = a & b;\nendmodule\n"
AND8_TWICE = "module and8(input [7:0] a, input [7:0] b, output [7:0] y);\n  assign y = ~(~(a & b) | (a ^ a));\nendmodule\n"


def test_a_design_is_measured_and_scored_against_its_reference(toolchain, tmp_path):
    if not quality_tools.ready():
        missing(f"quality tools: {quality_tools.problem()}")
    design, reference, broken = tmp_path / "design.v", tmp_path / "ref.v", tmp_path / "broken.v"
    design.write_text(AND8_TWICE)
    reference.write_text(AND8)
    broken.write_text("module and8(input a, output y);\n  assign y = a &;\nendmodule\n")
    words = ["quality", "measure", str(design), "--top", "and8", "--liberty", LIBERTY, "--reference", str(reference), "--json"]
    done = CliRunner().invoke(app, words, env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    out = json.loads(done.output)
    assert out["design"]["metrics"]["cells"] >= 8 and out["score"]["score"] == 0.5  # ABC removes the redundancy
    table = CliRunner().invoke(app, ["quality", "measure", str(broken), "--top", "and8", "--liberty", LIBERTY], env={"COLUMNS": "250"})
    assert table.exit_code == 1 and "syntax error" in table.output
